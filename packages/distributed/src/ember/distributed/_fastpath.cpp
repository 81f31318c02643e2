// The server's hot requests in C++, run from the uvloop protocol's data_received.
//
// A Runner answers, in order, the complete frames of the bytes a connection read that need nothing
// but the key dict: SET and ADD on keys nobody waits for, GET and WAIT on keys that exist, CHECK.
// It stops at the first frame it does not take (another opcode, a write that would wake a waiter,
// a read that would park, anything malformed or unusual, a frame not yet whole); the Python
// handlers run that frame with their full semantics and error messages, and call back in. The keys
// stay in the Python dict the rest of the server uses, so the two paths never disagree about the
// store's contents. uvloop calls the Runner's ``feed`` directly as the protocol's data_received,
// so a read of common requests runs no Python code at all.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace py = pybind11;

namespace {

enum Op : uint8_t { SET = 2, GET = 3, ADD = 4, WAIT = 6, CHECK = 7 };
constexpr size_t kHeader = 5;
constexpr char kOk = 0;

// Reads a frame body's fields; any overrun or leftover makes the frame Python's.
struct Fields {
  const char* p;
  const char* end;

  bool u32(uint32_t& v) {
    if (end - p < 4) return false;
    std::memcpy(&v, p, 4);
    p += 4;
    return true;
  }
  bool u64(uint64_t& v) {
    if (end - p < 8) return false;
    std::memcpy(&v, p, 8);
    p += 8;
    return true;
  }
  bool field(const char*& data, uint32_t& size) {
    if (!u32(size) || static_cast<size_t>(end - p) < size) return false;
    data = p;
    p += size;
    return true;
  }
  bool done() const { return p == end; }
};

// A new reference to ``data[:size]`` as bytes, or nullptr with a Python error set.
PyObject* as_bytes(const char* data, uint32_t size) { return PyBytes_FromStringAndSize(data, size); }

void reply(std::string& out, const char* body, size_t size) {
  const uint32_t length = static_cast<uint32_t>(size);
  char header[kHeader];
  std::memcpy(header, &length, 4);
  header[4] = kOk;
  out.append(header, kHeader);
  out.append(body, size);
}

// Only the plain decimal text the server itself writes for counters; anything else (spaces,
// underscores, a '+', more digits than int64 surely holds) is left to Python's int().
bool parse_counter(const char* s, Py_ssize_t n, int64_t& value) {
  bool negative = n > 0 && s[0] == '-';
  Py_ssize_t i = negative ? 1 : 0;
  if (n - i < 1 || n - i > 18) return false;
  int64_t v = 0;
  for (; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  value = negative ? -v : v;
  return true;
}

// 1: all present, 0: some missing, -1: a Python error.
int all_present(PyObject* keys, Fields& body, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    const char* name;
    uint32_t size;
    if (!body.field(name, size)) return 0;  // malformed: Python reports it
    PyObject* key = as_bytes(name, size);
    if (key == nullptr) return -1;
    const int found = PyDict_Contains(keys, key);
    Py_DECREF(key);
    if (found <= 0) return found;
  }
  return 1;
}

// Runs one frame: 1 done (reply appended), 0 not taken, -1 a Python error.
int run_frame(uint8_t op, Fields body, PyObject* keys, PyObject* waiting, std::string& out) {
  switch (op) {
    case SET: {
      const char *name, *value;
      uint32_t name_size, value_size;
      if (!body.field(name, name_size) || !body.field(value, value_size) || !body.done()) return 0;
      py::object key = py::reinterpret_steal<py::object>(as_bytes(name, name_size));
      if (!key) return -1;
      const int waited = PyDict_Contains(waiting, key.ptr());
      if (waited != 0) return waited < 0 ? -1 : 0;  // a write that wakes a waiter is Python's
      py::object data = py::reinterpret_steal<py::object>(as_bytes(value, value_size));
      if (!data || PyDict_SetItem(keys, key.ptr(), data.ptr()) != 0) return -1;
      reply(out, nullptr, 0);
      return 1;
    }
    case GET: {
      const char* name;
      uint32_t name_size;
      uint64_t timeout_ms;
      if (!body.field(name, name_size) || !body.u64(timeout_ms) || !body.done()) return 0;
      py::object key = py::reinterpret_steal<py::object>(as_bytes(name, name_size));
      if (!key) return -1;
      PyObject* value = PyDict_GetItemWithError(keys, key.ptr());  // borrowed
      if (value == nullptr) return PyErr_Occurred() ? -1 : 0;
      if (!PyBytes_Check(value)) return 0;
      reply(out, PyBytes_AS_STRING(value), static_cast<size_t>(PyBytes_GET_SIZE(value)));
      return 1;
    }
    case ADD: {
      const char* name;
      uint32_t name_size;
      uint64_t raw;
      if (!body.field(name, name_size) || !body.u64(raw) || !body.done()) return 0;
      int64_t amount;
      std::memcpy(&amount, &raw, 8);
      py::object key = py::reinterpret_steal<py::object>(as_bytes(name, name_size));
      if (!key) return -1;
      const int waited = PyDict_Contains(waiting, key.ptr());
      if (waited != 0) return waited < 0 ? -1 : 0;
      PyObject* current = PyDict_GetItemWithError(keys, key.ptr());  // borrowed
      if (current == nullptr && PyErr_Occurred()) return -1;
      if (current != nullptr) {
        int64_t old;
        if (!PyBytes_Check(current)) return 0;
        if (!parse_counter(PyBytes_AS_STRING(current), PyBytes_GET_SIZE(current), old)) return 0;
        if (__builtin_add_overflow(old, amount, &amount)) return 0;  // Python wraps it
      }
      char text[24];
      const int length = std::snprintf(text, sizeof text, "%lld", static_cast<long long>(amount));
      py::object data = py::reinterpret_steal<py::object>(as_bytes(text, static_cast<uint32_t>(length)));
      if (!data || PyDict_SetItem(keys, key.ptr(), data.ptr()) != 0) return -1;
      char packed[8];
      std::memcpy(packed, &amount, 8);
      reply(out, packed, 8);
      return 1;
    }
    case WAIT:
    case CHECK: {
      uint32_t count;
      if (!body.u32(count)) return 0;
      // The keys come before the WAIT's timeout: read them against a body that ends before it.
      Fields names{body.p, op == WAIT ? body.end - 8 : body.end};
      if (names.end < names.p) return 0;
      const int present = all_present(keys, names, count);
      if (present < 0) return -1;
      if (!names.done()) return 0;
      if (op == WAIT) {
        if (!present) return 0;  // it would park
        reply(out, nullptr, 0);
      } else {
        const char ready = present ? 1 : 0;
        reply(out, &ready, 1);
      }
      return 1;
    }
    default:
      return 0;
  }
}

// One connection's C++ side. uvloop calls ``feed`` as the protocol's data_received: while
// ``enabled`` (the Python side keeps it so: greeted, nothing buffered, no parked request) it answers
// the leading frames itself, writes their replies, and hands only what is left to ``fallback``
// (data, position), the Python protocol's own data_received. ``run`` serves that Python loop.
class Runner {
 public:
  Runner(py::dict keys, py::dict waiting, Py_ssize_t max_size, py::object fallback)
      : keys_(std::move(keys)), waiting_(std::move(waiting)), max_size_(max_size), fallback(std::move(fallback)) {}

  void feed(const py::bytes& data) {
    if (!enabled) {
      if (!fallback.is_none()) fallback(data, 0);
      return;
    }
    std::string out;
    const Py_ssize_t pos = run_frames(data, 0, out);
    if (!out.empty() && !write.is_none()) write(py::bytes(out));
    // The write may have lost the connection, which clears the fallback.
    if (pos < PyBytes_GET_SIZE(data.ptr()) && !fallback.is_none()) fallback(data, pos);
  }

  // (position after the frames answered, their replies).
  py::tuple run(const py::bytes& data, Py_ssize_t pos) {
    std::string out;
    pos = run_frames(data, pos, out);
    return py::make_tuple(pos, py::bytes(out));
  }

  bool enabled = false;
  py::object write = py::none();  // the transport's write, once connected
  py::object fallback;

 private:
  Py_ssize_t run_frames(const py::bytes& data, Py_ssize_t pos, std::string& out) {
    const char* base = PyBytes_AS_STRING(data.ptr());
    const Py_ssize_t size = PyBytes_GET_SIZE(data.ptr());
    while (size - pos >= static_cast<Py_ssize_t>(kHeader)) {
      uint32_t length;
      std::memcpy(&length, base + pos, 4);
      const uint8_t op = static_cast<uint8_t>(base[pos + 4]);
      if (static_cast<Py_ssize_t>(length) > max_size_ || size - pos - static_cast<Py_ssize_t>(kHeader) < length) break;
      const char* start = base + pos + kHeader;
      const int done = run_frame(op, Fields{start, start + length}, keys_.ptr(), waiting_.ptr(), out);
      if (done < 0) throw py::error_already_set();
      if (done == 0) break;
      pos += static_cast<Py_ssize_t>(kHeader) + length;
    }
    return pos;
  }

  py::dict keys_;
  py::dict waiting_;
  Py_ssize_t max_size_;
};

}  // namespace

PYBIND11_MODULE(_fastpath, m) {
  m.doc() = "The TCPStore server's common requests, answered from the key dict in C++.";
  py::class_<Runner>(m, "Runner")
      .def(py::init<py::dict, py::dict, Py_ssize_t, py::object>(), py::arg("keys"), py::arg("waiting"),
           py::arg("max_size"), py::arg("fallback"))
      .def("feed", &Runner::feed, py::arg("data"), "The protocol's data_received.")
      .def("run", &Runner::run, py::arg("data"), py::arg("pos"),
           "Answer the leading frames of data[pos:] that need only the keys; return (position, replies).")
      .def_readwrite("enabled", &Runner::enabled)
      .def_readwrite("write", &Runner::write)
      .def_readwrite("fallback", &Runner::fallback);
}
