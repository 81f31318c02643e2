"""Ember's tensor core: dtypes, devices, ``Tensor``, storage and views, the op registry and the
dispatcher. The package is installable now and filled in by the tensor-core work; importing it
alone (``pip install ember-tensor``) must keep working without the ``ember`` meta-package."""
