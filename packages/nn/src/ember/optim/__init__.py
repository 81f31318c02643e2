"""``ember.optim``: optimizers and ``lr_scheduler``, as ``torch.optim``."""

from ember.optim import lr_scheduler, swa_utils
from ember.optim._adafactor import Adafactor
from ember.optim._muon import Muon
from ember.optim._stateless import swap_in_optimizer_params_and_state
from ember.optim.adadelta import Adadelta
from ember.optim.adagrad import Adagrad
from ember.optim.adam import Adam, AdamW
from ember.optim.adamax import Adamax
from ember.optim.asgd import ASGD
from ember.optim.lbfgs import LBFGS
from ember.optim.nadam import NAdam
from ember.optim.optimizer import Optimizer
from ember.optim.radam import RAdam
from ember.optim.rmsprop import RMSprop
from ember.optim.rprop import Rprop
from ember.optim.sgd import SGD
from ember.optim.sparse_adam import SparseAdam

__all__ = [
    "ASGD",
    "LBFGS",
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "Muon",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SparseAdam",
    "lr_scheduler",
    "swa_utils",
    "swap_in_optimizer_params_and_state",
]
