"""Against PyTorch: the sparse copies (``indices_copy``, ``values_copy``) and ``saddmm``, ``from_file``
(private and shared mappings), ``resize_`` where Ember differs (growing), the Tensor attributes
``output_nr``, ``name``, ``const_data_ptr``, ``pin_memory``, ``index`` and ``grad_dtype``, and the
shell unsigned dtypes' promotion."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the oracle, PyTorch, is not installed")

import ember  # noqa: E402


def _sparse(lib, coalesce: bool = True):
    indices = lib.tensor([[0, 1, 1], [2, 0, 2]])
    values = lib.tensor([1.5, -2.0, 3.0])
    s = lib.sparse_coo_tensor(indices, values, (2, 3))
    return s.coalesce() if coalesce else s


def test_sparse_copies_match_the_views_cloned():
    s, t = _sparse(ember), _sparse(torch)
    for ours, theirs in ((ember.indices_copy(s), t.indices()), (ember.values_copy(s), t.values())):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert ours._base is None  # a copy, not a view
    ours = ember.values_copy(s)
    ours.add_(1)
    np.testing.assert_array_equal(s.values().numpy(), t.values().numpy())  # the copy does not alias
    out = ember.empty(0)
    assert ember.values_copy(s, out=out) is out
    np.testing.assert_array_equal(out.numpy(), t.values().numpy())


def test_sparse_copies_refuse_what_the_views_refuse():
    dense = ember.zeros(2)
    for name, theirs in (("indices_copy", "indices"), ("values_copy", "values")):
        with pytest.raises(RuntimeError) as expected:
            getattr(torch, name)(torch.zeros(2))
        with pytest.raises(RuntimeError, match="layout but got Strided") as ours:
            getattr(ember, name)(dense)
        assert str(ours.value) == str(expected.value)
        with pytest.raises(RuntimeError, match="uncoalesced"):
            getattr(ember, name)(_sparse(ember, coalesce=False))
        with pytest.raises(RuntimeError, match="uncoalesced"):
            getattr(_sparse(torch, coalesce=False), theirs)()


def test_values_copy_differentiates():
    values = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = ember.sparse_coo_tensor(ember.tensor([[0, 1, 1], [2, 0, 2]]), values, (2, 3)).coalesce()
    (ember.values_copy(s) * ember.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(values.grad.numpy(), [1.0, 2.0, 3.0])


def test_saddmm_is_sspaddmm():
    dense = np.arange(4, dtype=np.float32).reshape(2, 2)
    ours = ember.saddmm(_square(ember), _square(ember), ember.tensor(dense), beta=2, alpha=3)
    theirs = torch.saddmm(_square(torch), _square(torch), torch.tensor(dense), beta=2, alpha=3)
    assert ours.is_sparse and ours._nnz() == theirs._nnz()
    np.testing.assert_allclose(ours.to_dense().numpy(), theirs.to_dense().numpy())
    with pytest.raises(RuntimeError, match="expected 'mat1' to have sparse layout"):
        ember.saddmm(_square(ember), ember.eye(2), ember.eye(2))
    with pytest.raises(RuntimeError, match="expected 'mat1' to have sparse layout"):
        torch.saddmm(_square(torch), torch.eye(2), torch.eye(2))


def _square(lib):
    return lib.sparse_coo_tensor(lib.tensor([[0, 1], [1, 0]]), lib.tensor([1.0, 2.0]), (2, 2))


def test_from_file_private_mapping(tmp_path):
    path = str(tmp_path / "data.bin")
    np.arange(10, dtype=np.float32).tofile(path)
    for kwargs in ({"size": 10}, {"shared": False, "size": 4}, {"size": 5, "dtype": "float64"}, {}):
        args = {k: getattr(ember, v) if k == "dtype" else v for k, v in kwargs.items()}
        targs = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
        ours, theirs = ember.from_file(path, **args), torch.from_file(path, **targs)
        assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    written = ember.from_file(path, False, 3)
    written.fill_(9.0)  # copy-on-write: the file keeps its bytes
    np.testing.assert_array_equal(ember.from_file(path, False, 3).numpy(), [0.0, 1.0, 2.0])
    assert ember.from_file(path, size=2, requires_grad=True).requires_grad


def test_from_file_errors_match(tmp_path):
    path = str(tmp_path / "data.bin")
    np.arange(4, dtype=np.float32).tofile(path)
    missing = str(tmp_path / "missing.bin")
    for args in ((path, False, 20), (missing, None, 5), (path, False, -1)):
        with pytest.raises(RuntimeError) as expected:
            torch.from_file(*args)
        with pytest.raises(RuntimeError) as ours:
            ember.from_file(*args)
        assert str(ours.value) == str(expected.value)
    with pytest.raises(NotImplementedError, match="no meta kernel"):
        ember.from_file(path, size=2, device="meta")


def test_from_file_shared_mapping_writes_through(tmp_path):
    ours_path, their_path = str(tmp_path / "ours.bin"), str(tmp_path / "theirs.bin")
    for lib, path in ((ember, ours_path), (torch, their_path)):
        t = lib.from_file(path, True, 4)  # created, zero-filled
        t.fill_(3.0)
        del t
        grown = lib.from_file(path, True, 8)  # extended
        grown[6] = 5.0
        del grown
    with open(ours_path, "rb") as a, open(their_path, "rb") as b:
        assert a.read() == b.read()


def test_resize_refuses_to_grow_a_storage():
    t = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match="cannot grow a tensor's storage"):
        t.resize_(4, 4)
    assert tuple(t.shape) == (2, 3)  # unchanged
    t.resize_(2)
    t.resize_(3, 2)  # back within the storage's bytes, as PyTorch allows
    np.testing.assert_array_equal(t.numpy(), np.zeros((3, 2)))
    meta = ember.zeros(2, device="meta")
    assert tuple(meta.resize_(5, 5).shape) == (5, 5)  # no bytes to move


def test_resize_keeps_views_and_bumps_the_version():
    for lib in (ember, torch):
        base = lib.arange(12.0)
        view = base[2:]
        before = base._version
        view.resize_(2, 2)
        assert view.stride() == (2, 1) and view.storage_offset() == 2
        assert base._version == before + 1
        view.fill_(7.0)
        np.testing.assert_array_equal(base[2:6].numpy(), [7.0] * 4)
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            lib.zeros(3, requires_grad=True).resize_(2)


def test_as_strided_inplace_matches():
    for args in (([2, 2], [1, 2], 1), ([3, 3], [4, 1])):
        ours, theirs = ember.arange(12.0).reshape(3, 4), torch.arange(12.0).reshape(3, 4)
        assert ember.as_strided_(ours, *args) is ours
        theirs.as_strided_(*args)
        assert (ours.stride(), ours.storage_offset()) == (theirs.stride(), theirs.storage_offset())
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x = ember.arange(6.0, requires_grad=True)
    y = x * 2
    y.as_strided_([2], [3], 1)
    y.sum().backward()  # through the strided view: elements 1 and 4
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 0.0, 0.0, 2.0, 0.0])


def test_tensor_attributes_match():
    for lib in (ember, torch):
        leaf = lib.randn(2, requires_grad=True)
        parts = leaf.unbind()
        assert (leaf.output_nr, parts[0].output_nr, parts[1].output_nr, (leaf * 2).output_nr) == (0, 0, 1, 0)
        assert leaf.name is None
        t = lib.arange(4.0)[1:]
        assert t.const_data_ptr() == t.data_ptr()
    with pytest.raises(RuntimeError) as expected:
        torch.zeros(2).pin_memory()
    with pytest.raises(RuntimeError) as ours:
        ember.zeros(2).pin_memory()
    assert str(ours.value) == str(expected.value)
    with pytest.raises(NotImplementedError, match="first-class dimension"):
        ember.zeros(2).index((0,), None)


def test_grad_dtype_matches():
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        assert x.grad_dtype is x.dtype
        x.grad_dtype = lib.float64
        (x * 3).sum().backward()
        (x * 3).sum().backward()
        assert x.grad.dtype is lib.float64
        np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])
        z = lib.tensor([1.0, 2.0], requires_grad=True)
        z.grad_dtype = lib.float64
        assert lib.autograd.grad((z * 2).sum(), z)[0].dtype is lib.float64  # captured gradients are cast too
        y = lib.tensor([1.0], requires_grad=True)
        y.grad_dtype = None
        assert y.grad_dtype is None
        y.grad = lib.zeros(1, dtype=lib.float64)  # any dtype is allowed
    assert _grad_dtype_errors(ember) == _grad_dtype_errors(torch)


def _grad_dtype_errors(lib) -> list[str]:
    x = lib.tensor([1.0], requires_grad=True)
    actions = (
        lambda: setattr(x * 2, "grad_dtype", lib.float64),
        lambda: (x * 2).grad_dtype,
        lambda: setattr(x, "grad_dtype", "float"),
        lambda: setattr(x, "grad", lib.zeros(1, dtype=lib.float64)),
        lambda: (setattr(x, "grad", lib.zeros(1)), setattr(x, "grad_dtype", lib.int64)),
    )
    errors = []
    for action in actions:
        with pytest.raises(RuntimeError) as error:
            action()
        errors.append(str(error.value).replace("a torch.dtype", "an ember.dtype"))
    return errors


def test_shell_unsigned_dtypes_do_not_promote():
    for name in ("uint16", "uint32", "uint64"):
        with pytest.raises(RuntimeError) as expected:
            torch.promote_types(getattr(torch, name), torch.int64)
        with pytest.raises(RuntimeError) as ours:
            ember.promote_types(getattr(ember, name), ember.int64)
        assert str(ours.value) == str(expected.value)
        assert ember.promote_types(getattr(ember, name), getattr(ember, name)) is getattr(ember, name)
    big = np.array([1, 2**63 + 5], np.uint64)
    np.testing.assert_array_equal(ember.from_numpy(big).numpy(), torch.from_numpy(big).numpy())


def test_shell_unsigned_tensors_save_and_load_both_ways(tmp_path):
    ours = {"h": ember.hash_tensor(ember.arange(6.0).reshape(2, 3), 1), "u": ember.tensor([1, 2], dtype=ember.uint16)}
    ember.save(ours, tmp_path / "ours.pt")
    loaded = torch.load(tmp_path / "ours.pt")
    assert loaded["h"].dtype is torch.uint64 and loaded["u"].dtype is torch.uint16
    np.testing.assert_array_equal(loaded["h"].numpy(), ours["h"].numpy())
    theirs = {"h": torch.hash_tensor(torch.arange(6.0).reshape(2, 3), 1), "w": torch.tensor([7], dtype=torch.uint32)}
    torch.save(theirs, tmp_path / "theirs.pt")
    back = ember.load(tmp_path / "theirs.pt")
    assert back["h"].dtype is ember.uint64 and back["w"].dtype is ember.uint32
    np.testing.assert_array_equal(back["h"].numpy(), theirs["h"].numpy())
    np.testing.assert_array_equal(back["w"].numpy(), [7])
