"""``ember.lobpcg``: a few extreme eigenpairs of a symmetric (generalized) eigenproblem ``A X = B X E``.

LOBPCG (Knyazev 2001) iterates on a search basis ``S = [X, P, W]``: the current eigenvector
estimates ``X``, the previous search directions ``P`` and the (optionally preconditioned, ``iK``)
residuals ``W``. Each step solves the small projected problem ``S^T A S`` by Rayleigh-Ritz and takes
the best ``n`` Ritz vectors as the new ``X``. PyTorch's two variants are here, with its defaults and
convergence test (Duersch et al. 2018, backward-stable relative residuals; a pair counts as
converged only when every pair before it has):

- ``method="ortho"`` (the default) keeps ``S`` B-orthonormal: new residual directions are
  orthogonalized against ``[X, P]`` by repeated projection and SVQB (Stathopoulos and Wu 2002,
  Duersch's Algorithms 3 and 6), so the projected problem is a standard one;
- ``method="basic"`` reduces the generalized projected problem with a Cholesky factor instead.

Converged pairs are locked: later steps search only among the remaining columns. A batch of
matrices is solved one matrix at a time. The starting block is ``ember.randn`` unless ``X`` is
given, so ``ember.manual_seed`` makes runs repeatable (they are not PyTorch's draws: compare
eigenvalues to a tolerance). Gradients through ``lobpcg`` are not implemented in Ember.
"""

from __future__ import annotations

from collections.abc import Callable

from ember.core import dtypes as D
from ember.core.api import functions, public
from ember.core.aten.linalg.linalg_functions import cholesky, eigh, qr, solve_triangular
from ember.core.aten.linalg.lowrank import floating_dtype, matmul
from ember.core.tensor import Tensor


def _qform(A: Tensor | None, S: Tensor) -> Tensor:
    """``S^T A S`` (``A`` None is the identity)."""
    return S.mT.matmul(matmul(A, S))


def _symeig(M: Tensor, largest: bool = False) -> tuple[Tensor, Tensor]:
    values, vectors = eigh(M, UPLO="U")
    if largest:  # eigh sorts ascending
        values, vectors = values.flip(-1), vectors.flip(-1)
    return values, vectors


def _norm(t: Tensor, dim=None) -> Tensor:
    return functions["norm"](t) if dim is None else functions["norm"](t, 2, dim)


class LOBPCG:
    """The state of one LOBPCG run: ``X``, ``E``, the residuals ``R``, the basis ``S`` and counters
    (``ivars["istep"]``, ``ivars["converged_count"]``); a ``tracker`` is called with it after every
    step, and may stop the run by setting ``bvars["force_stop"] = True``."""

    def __init__(self, A, B, X, iK, iparams: dict, fparams: dict, bparams: dict, method: str, tracker) -> None:
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        m, n = iparams["m"], iparams["n"]
        zeros = functions["zeros"]
        self.X = X
        self.E = zeros((n,), dtype=X.dtype, device=X.device)
        self.R = zeros((m, n), dtype=X.dtype, device=X.device)
        self.S = zeros((m, 3 * n), dtype=X.dtype, device=X.device)
        self.tvars: dict[str, Tensor] = {}
        self.ivars: dict[str, int] = {"istep": 0}
        self.fvars: dict[str, float] = {"_": 0.0}
        self.bvars: dict[str, bool] = {"_": False}

    def run(self) -> None:
        self.update()
        if self.tracker is not None:
            self.tracker(self)
        while not self.stop_iteration():
            self.update()
            if self.tracker is not None:
                self.tracker(self)

    def stop_iteration(self) -> bool:
        return (
            self.bvars.get("force_stop", False)
            or self.ivars["iterations_left"] == 0
            or self.ivars["converged_count"] >= self.iparams["k"]
        )

    def update(self) -> None:
        if self.ivars["istep"] == 0:
            x_norm = float(_norm(self.X))
            self.fvars["X_norm"] = x_norm
            self.fvars["A_norm"] = float(_norm(matmul(self.A, self.X))) / x_norm
            self.fvars["B_norm"] = float(_norm(matmul(self.B, self.X))) / x_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self.ivars["converged_count"] = 0
            self.ivars["converged_end"] = 0
        (self._step_ortho if self.method == "ortho" else self._step_basic)()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1

    def update_residual(self) -> None:
        self.R = matmul(self.A, self.X) - matmul(self.B, self.X) * self.E

    def update_converged_count(self) -> int:
        """How many leading pairs have a relative residual below ``tol`` (all before them too)."""
        A_norm, B_norm = self.fvars["A_norm"], self.fvars["B_norm"]
        scale = _norm(self.X, (0,)) * (A_norm + self.E[: self.X.shape[-1]].abs() * B_norm)
        rerr = _norm(self.R, (0,)) / scale
        count = 0
        for ok in (rerr < self.fparams["tol"]).tolist():
            if not ok:
                break
            count += 1
        if count < self.ivars["converged_count"]:
            raise AssertionError(
                f"the number of converged eigenpairs (was {self.ivars['converged_count']}, got {count}) cannot decrease"
            )
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    # -- the two variants --------------------------------------------------------------------------

    def _first_ritz(self) -> tuple[Tensor, Tensor]:
        """Rayleigh-Ritz on the starting block: its Ritz values and vectors."""
        Ri = self._rayleigh_ritz_transform(self.X)
        E, Z = _symeig(Ri.mT.matmul(_qform(self.A, self.X)).matmul(Ri), self.bparams["largest"])
        return E, self.X.matmul(Ri.matmul(Z))

    def _step_basic(self) -> None:
        n, nc, ns = self.iparams["n"], self.ivars["converged_count"], self.ivars["converged_end"]
        largest = self.bparams["largest"]
        if self.ivars["istep"] == 0:
            E, self.X = self._first_ritz()
            self.E[:] = E
            n_p = 0
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            W = matmul(self.iK, self.R)
        else:
            S_ = self.S[:, nc:ns]
            Ri = self._rayleigh_ritz_transform(S_)
            E_, Z = _symeig(Ri.mT.matmul(_qform(self.A, S_)).matmul(Ri), largest)
            self.X[:, nc:] = S_.matmul(Ri.matmul(Z[:, : n - nc]))
            self.E[nc:] = E_[: n - nc]
            P = S_.matmul(Ri.matmul(Z[:, n : 2 * n - nc]))
            n_p = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            self.S[:, n : n + n_p] = P
            W = matmul(self.iK, self.R[:, nc:])
        ns = self.ivars["converged_end"] = n + n_p + W.shape[-1]
        self.S[:, n + n_p : ns] = W

    def _step_ortho(self) -> None:
        n, nc, ns = self.iparams["n"], self.ivars["converged_count"], self.ivars["converged_end"]
        largest = self.bparams["largest"]
        if self.ivars["istep"] == 0:
            _, self.X = self._first_ritz()
            self.update_residual()
            n_p = 0
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            W = self._ortho(self.R, self.X)
        else:
            S_ = self.S[:, nc:ns]
            E_, Z = _symeig(_qform(self.A, S_), largest)  # S_ is B-orthonormal: a standard problem
            self.X[:, nc:] = S_.matmul(Z[:, : n - nc])
            self.E[nc:] = E_[: n - nc]
            # The new directions: the other Ritz vectors' part that completes X's update.
            P = S_.matmul(Z[:, n - nc :].matmul(qr(Z[: n - nc, n - nc :].mT).Q))
            n_p = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            self.S[:, n : n + n_p] = P
            W = self._ortho(self.R[:, nc:], self.S[:, : n + n_p])
        ns = self.ivars["converged_end"] = n + n_p + W.shape[-1]
        self.S[:, n + n_p : ns] = W

    # -- orthogonalization -----------------------------------------------------------------------

    def _rayleigh_ritz_transform(self, S: Tensor) -> Tensor:
        """``Ri`` (upper triangular) with ``Ri^T (S^T B S) Ri = I``: a Cholesky factor of the
        diagonally scaled ``S^T B S``, inverted and scaled back."""
        SBS = _qform(self.B, S)
        d = SBS.diagonal(0, -2, -1) ** -0.5
        R = cholesky((SBS * d) * d.reshape(-1, 1), upper=True)
        return solve_triangular(R, d.diag_embed(), upper=True, left=False)

    def _svqb(self, U: Tensor, drop: bool, tau: float) -> Tensor:
        """B-orthonormal columns spanning ``U`` (dropping the weakest directions when ``drop``)."""
        if U.numel() == 0:
            return U
        UBU = _qform(self.B, U)
        d = UBU.diagonal(0, -2, -1)
        nonzero = (d.abs() != 0).nonzero().reshape(-1)
        if nonzero.numel() < d.numel():  # exactly zero columns cannot be scaled: drop them first
            U = U[:, nonzero]
            if U.numel() == 0:
                return U
            UBU = _qform(self.B, U)
            d = UBU.diagonal(0, -2, -1)
        scale = (d**-0.5).reshape(-1, 1)
        E, Z = _symeig((UBU * scale) * scale.mT)
        floor = tau * float(E.abs().max())
        if drop:
            keep = (floor < E).nonzero().reshape(-1)
            E, Z, scale = E[keep], Z[:, keep], scale[keep]
        else:
            E = functions["where"](floor > E, floor, E)
        return (U * scale.mT).matmul(Z * E**-0.5)

    def _ortho(self, U: Tensor, V: Tensor) -> Tensor:
        """B-orthonormal columns from ``U``, B-orthogonal to ``V``'s (possibly none)."""
        tau_ortho = self.fparams["ortho_tol"]
        tau_drop, tau_replace = self.fparams["ortho_tol_drop"], self.fparams["ortho_tol_replace"]
        use_drop = self.bparams["ortho_use_drop"]
        for key in [k for k in self.fvars if k.startswith("ortho_") and k.endswith("_rerr")]:
            del self.fvars[key]
        BV_norm = float(_norm(matmul(self.B, V)))
        VBU = V.mT.matmul(matmul(self.B, U))
        i = j = 0
        for i in range(self.iparams["ortho_i_max"]):
            U = U - V.matmul(VBU)
            drop, tau = False, tau_drop
            for j in range(self.iparams["ortho_j_max"]):
                if use_drop:
                    U = self._svqb(U, drop, tau)
                    drop, tau = True, tau_replace
                else:
                    U = self._svqb(U, False, tau_replace)
                if U.numel() == 0:  # every column of U lay in V's span
                    self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
                    return U
                BU = matmul(self.B, U)
                UBU = U.mT.matmul(BU)
                eye = functions["eye"](UBU.shape[-1], dtype=UBU.dtype, device=UBU.device)
                rerr = float(_norm(UBU - eye)) / float(_norm(BU) * _norm(U))
                self.fvars[f"ortho_UBUmI_rerr[{i}, {j}]"] = rerr
                if rerr < tau_ortho:
                    break
            VBU = V.mT.matmul(BU)
            rerr = float(_norm(VBU)) / (BV_norm * float(_norm(U)))
            self.fvars[f"ortho_VBU_rerr[{i}]"] = rerr
            if rerr < tau_ortho:
                break
            if self.iparams["m"] < U.shape[-1] + V.shape[-1]:
                B_cols = self.iparams["m"]
                raise ValueError(
                    f"Overdetermined shape of U: #B-cols(={B_cols}) >= #U-cols(={U.shape[-1]}) + "
                    f"#V-cols(={V.shape[-1]}) must hold"
                )
        self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
        return U


@public("lobpcg")
def lobpcg(
    A: Tensor,
    k: int | None = None,
    B: Tensor | None = None,
    X: Tensor | None = None,
    n: int | None = None,
    iK: Tensor | None = None,
    niter: int | None = None,
    tol: float | None = None,
    largest: bool | None = None,
    method: str | None = None,
    tracker: Callable | None = None,
    ortho_iparams: dict[str, int] | None = None,
    ortho_fparams: dict[str, float] | None = None,
    ortho_bparams: dict[str, bool] | None = None,
) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or, with ``largest=False``, smallest) eigenpairs ``(E, X)`` of the symmetric
    positive definite generalized problem ``A X = B X diag(E)`` (``B`` None: the identity), by LOBPCG."""
    if A.requires_grad or (B is not None and B.requires_grad):
        raise NotImplementedError(
            "lobpcg: gradients through lobpcg are not implemented in Ember; call it on A.detach() (and B.detach())"
        )
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = floating_dtype(A)
    if tol is None:
        tol = {D.float32: 1.2e-07, D.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(
            f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x the number "
            f"of requested eigenpairs (={n})"
        )
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        iparams.setdefault("ortho_i_max", 3)
        iparams.setdefault("ortho_j_max", 3)
        for key in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(key, tol)
        bparams.setdefault("ortho_use_drop", False)

    def solve(A_, B_, X_, batch_index=None):
        X_ = functions["randn"]((m, n), dtype=dtype, device=A.device) if X_ is None else X_
        if not (len(X_.shape) == 2 and tuple(X_.shape) == (m, n)):
            raise AssertionError(f"X shape mismatch: got {X_.shape}, expected {(m, n)}")
        if batch_index is not None:
            iparams["batch_index"] = batch_index
        worker = LOBPCG(A_, B_, X_, iK, iparams, fparams, bparams, method, tracker)
        worker.run()
        return worker.E[:k], worker.X[:, :k]

    if A.ndim == 2:
        return solve(A, B, X)
    batch = tuple(A.shape[:-2])
    count = 1
    for size in batch:
        count *= size
    bA = A.reshape((count, m, m))
    bB = B.reshape((count, m, m)) if B is not None else None
    bX = X.reshape((count, *X.shape[-2:])) if X is not None else None
    results = [
        solve(bA[i], bB[i] if bB is not None else None, bX[i] if bX is not None else None, i) for i in range(count)
    ]
    E = functions["stack"]([e for e, _ in results]).reshape((*batch, k))
    V = functions["stack"]([v for _, v in results]).reshape((*batch, m, k))
    return E, V
