// The client's round trip in C++: one request frame out, one reply frame in, without the GIL.
//
// ``post`` sends a request without waiting for its reply (SET: PyTorch's set is one-way too); the
// channel counts the replies owed and reads them, in order, ahead of the next request's reply,
// so a set costs a send and no round trip. A posted request's error is reported by the next call.
//
// A TCPStore client spends most of a call waiting on the kernel. Python's socket methods drop and
// retake the GIL around every syscall, and the framing around them costs more than the syscalls;
// here the whole exchange (header, send, every recv until the reply is whole) runs with the GIL
// released once, so the other threads of the process run meanwhile and a call costs two GIL
// handoffs. The Python side owns the socket (connecting, timeouts through SO_RCVTIMEO, closing);
// a Channel only borrows its descriptor. Errors come back as the OSError subclasses Python's own
// socket methods raise (BlockingIOError when SO_RCVTIMEO fires, ConnectionResetError on EOF).

#include <pybind11/pybind11.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace py = pybind11;

namespace {

constexpr size_t kHeader = 5;  // u32 body length, u8 code
constexpr size_t kChunk = 65536;

uint32_t load_u32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // the wire is little-endian, as is every host we build for
  return v;
}

// Raised with the GIL held, errno as the failed syscall left it.
[[noreturn]] void raise_errno(int error) {
  errno = error;
  PyErr_SetFromErrno(PyExc_OSError);
  throw py::error_already_set();
}

// Appends a field (u32 length + bytes) or a list of them, the protocol's body encodings.
void append_u32(std::string& out, size_t v) {
  const uint32_t x = static_cast<uint32_t>(v);
  out.append(reinterpret_cast<const char*>(&x), 4);
}

// false: an item of a key list that is not a str (the caller raises the TypeError).
bool append_field(std::string& out, PyObject* item, bool keys) {
  if (PyUnicode_Check(item)) {
    if (!keys) return false;
    Py_ssize_t size;
    const char* text = PyUnicode_AsUTF8AndSize(item, &size);
    if (text == nullptr) throw py::error_already_set();
    append_u32(out, static_cast<size_t>(size));
    out.append(text, static_cast<size_t>(size));
    return true;
  }
  if (PyBytes_Check(item) && !keys) {
    append_u32(out, static_cast<size_t>(PyBytes_GET_SIZE(item)));
    out.append(PyBytes_AS_STRING(item), static_cast<size_t>(PyBytes_GET_SIZE(item)));
    return true;
  }
  return false;
}

// One part of a request body: None adds nothing, a str (a key) or bytes (a value) adds a field,
// an int adds 8 bytes (two's complement), a list adds a count and its fields.
bool append_part(std::string& out, PyObject* part, bool keys) {
  if (part == Py_None) return true;
  if (PyLong_Check(part)) {
    const long long v = PyLong_AsLongLong(part);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    out.append(reinterpret_cast<const char*>(&v), 8);
    return true;
  }
  if (PyList_Check(part)) {
    const Py_ssize_t count = PyList_GET_SIZE(part);
    append_u32(out, static_cast<size_t>(count));
    for (Py_ssize_t i = 0; i < count; ++i) {
      if (!append_field(out, PyList_GET_ITEM(part, i), keys)) return false;
    }
    return true;
  }
  return append_field(out, part, keys);
}

constexpr int kTooLarge = -1;  // (kTooLarge, body size): over the server's max_value_size
constexpr int kBadKey = -2;    // (kBadKey, None): a key that is not a str

class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  ~Channel() { std::free(buf_); }

  // The request ``op`` with body parts ``keys`` (a str or a list of str, or None) and ``value``
  // (bytes, an int, a list of bytes, or None); returns (status, reply body). ``within_us`` bounds
  // the wait for the reply (SO_RCVTIMEO, set only when it changes).
  py::tuple request(int op, py::handle keys, py::handle value, long long within_us) {
    out_.assign(kHeader, '\0');
    if (!append_part(out_, keys.ptr(), true)) return py::make_tuple(kBadKey, py::none());
    if (!append_part(out_, value.ptr(), false)) throw py::type_error("a store value must be bytes");
    return exchange(op, within_us);
  }

  // The request ``op`` with a body the caller encoded.
  py::tuple call(int op, const py::bytes& body, long long within_us) {
    out_.assign(kHeader, '\0');
    out_.append(PyBytes_AS_STRING(body.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(body.ptr())));
    return exchange(op, within_us);
  }

  // Like ``request``, but returns (0, None) once the request is sent; its reply is read later.
  // A failed earlier posted request is returned (status, body) instead, and this one is not sent.
  py::tuple post(int op, py::handle keys, py::handle value, long long within_us) {
    if (failed_status_ != 0) return take_failure();
    out_.assign(kHeader, '\0');
    if (!append_part(out_, keys.ptr(), true)) return py::make_tuple(kBadKey, py::none());
    if (!append_part(out_, value.ptr(), false)) throw py::type_error("a store value must be bytes");
    if (!frame(op)) return py::make_tuple(kTooLarge, out_.size() - kHeader);
    if (within_us != within_us_) set_timeouts(within_us);
    // Bound the replies owed, so that a client that only sets keeps the server's buffers small.
    round_trip(true, pending_ >= kMaxPending ? pending_ / 2 : -1, false);
    ++pending_;
    if (failed_status_ != 0) return take_failure();
    return py::make_tuple(0, py::none());
  }

  // Reads every reply still owed to posted requests; returns a failure among them as ``post`` does.
  py::tuple flush() {
    if (pending_ > 0) round_trip(false, 0, false);
    if (failed_status_ != 0) return take_failure();
    return py::make_tuple(0, py::none());
  }

  long long max_size = INT64_MAX;
  int pending() const { return pending_; }

 private:
  static constexpr int kMaxPending = 256;

  bool frame(int op) {
    const size_t size = out_.size() - kHeader;
    if (static_cast<long long>(size) > max_size) return false;
    const uint32_t length = static_cast<uint32_t>(size);
    std::memcpy(&out_[0], &length, 4);
    out_[4] = static_cast<char>(op);
    return true;
  }

  py::tuple take_failure() {
    py::tuple failure = py::make_tuple(failed_status_, py::bytes(failed_body_));
    failed_status_ = 0;
    failed_body_.clear();
    return failure;
  }

  py::tuple exchange(int op, long long within_us) {
    if (!frame(op)) return py::make_tuple(kTooLarge, out_.size() - kHeader);
    if (within_us != within_us_) set_timeouts(within_us);
    const size_t reply = round_trip(true, 0, true);
    const int status = static_cast<unsigned char>(buf_[4]);
    py::bytes body(buf_ + kHeader, reply);
    consume(kHeader + reply);
    if (out_.capacity() > 4 * kChunk) std::string().swap(out_);  // give back one large request's space
    if (failed_status_ != 0) return take_failure();
    return py::make_tuple(status, std::move(body));
  }

  void set_timeouts(long long within_us) {
    timeval limit{static_cast<time_t>(within_us / 1000000), static_cast<suseconds_t>(within_us % 1000000)};
    if (setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit) != 0 ||
        setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit) != 0) {
      raise_errno(errno);
    }
    within_us_ = within_us;
  }

  // Sends out_ (when ``send_request``), then reads until no more than ``keep_pending`` replies are
  // owed to posted requests (-1: read nothing) and, with ``want_reply``, buf_ starts with the whole
  // reply frame of this request, whose body length it returns. The GIL is released once for the
  // send and the reads: a thread that retook it in between would only queue behind the process's
  // other threads for it, twice per call.
  size_t round_trip(bool send_request, int keep_pending, bool want_reply) {
    size_t sent = send_request ? 0 : out_.size();
    while (true) {
      settle_until(keep_pending);
      size_t body = 0;
      const bool settled = keep_pending < 0 || pending_ <= keep_pending;
      const bool done = settled && (!want_reply || has_frame(body));
      if (done && sent == out_.size()) return body;
      if (!done) reserve(len_ + std::max(wanted(), kChunk));
      int error = 0;
      bool closed = false;
      {
        py::gil_scoped_release nogil;
        while (sent < out_.size()) {
          const ssize_t n = send(fd_, out_.data() + sent, out_.size() - sent, MSG_NOSIGNAL);
          if (n < 0) {
            error = errno;
            break;
          }
          sent += static_cast<size_t>(n);
        }
        // Read until a whole frame is in (an owed reply or this one), while it fits: most take one recv.
        while (error == 0 && !done && !has_frame(body) && len_ + wanted() <= cap_) {
          const ssize_t n = recv(fd_, buf_ + len_, cap_ - len_, 0);
          if (n <= 0) {
            if (n < 0) error = errno;
            closed = n == 0;
            break;
          }
          len_ += static_cast<size_t>(n);
        }
      }
      if (closed) {
        PyErr_SetString(PyExc_ConnectionResetError, "the server closed the connection");
        throw py::error_already_set();
      }
      if (error == EINTR) {
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      } else if (error != 0) {
        raise_errno(error);
      }
    }
  }

  void settle_until(int keep_pending) {
    if (keep_pending < 0) return;
    size_t body = 0;
    while (pending_ > keep_pending && has_frame(body)) settle_one(body);
  }

  void settle_one(size_t body) {
    const int status = static_cast<unsigned char>(buf_[4]);
    if (status != 0 && failed_status_ == 0) {
      failed_status_ = status;
      failed_body_.assign(buf_ + kHeader, body);
    }
    consume(kHeader + body);
    --pending_;
  }

  bool has_frame(size_t& body) const {
    if (len_ < kHeader) return false;
    body = load_u32(buf_);
    return len_ >= kHeader + body;
  }

  // How many more bytes the frame at the front of buf_ needs (at least its header's).
  size_t wanted() const { return len_ < kHeader ? kHeader - len_ : kHeader + load_u32(buf_) - len_; }

  void reserve(size_t capacity) {
    if (capacity <= cap_) return;
    char* grown = static_cast<char*>(std::realloc(buf_, capacity));
    if (grown == nullptr) throw std::bad_alloc();
    buf_ = grown;
    cap_ = capacity;
  }

  void consume(size_t used) {
    len_ -= used;
    if (len_ > 0) std::memmove(buf_, buf_ + used, len_);
    if (cap_ > 4 * kChunk && len_ <= kChunk) {  // give back the space of one large reply
      char* shrunk = static_cast<char*>(std::realloc(buf_, kChunk));
      if (shrunk != nullptr) {
        buf_ = shrunk;
        cap_ = kChunk;
      }
    }
  }

  int fd_;
  std::string out_;       // the request being sent: header, then body
  long long within_us_ = -1;  // the SO_RCVTIMEO/SO_SNDTIMEO now set, -1 for the system's default
  char* buf_ = nullptr;   // received bytes not yet returned: [0, len_) of cap_
  size_t len_ = 0;
  size_t cap_ = 0;
  int pending_ = 0;          // replies owed to posted requests, read ahead of the next reply
  int failed_status_ = 0;    // the first failure among them, until a call reports it
  std::string failed_body_;
};

}  // namespace

PYBIND11_MODULE(_channel, m) {
  m.doc() = "The TCPStore client's request/reply exchange, run without the GIL.";
  m.attr("TOO_LARGE") = kTooLarge;
  m.attr("BAD_KEY") = kBadKey;
  py::class_<Channel>(m, "Channel")
      .def(py::init<int>(), py::arg("fd"))
      .def("request", &Channel::request, py::arg("op"), py::arg("keys"), py::arg("value"), py::arg("within_us"),
           "Send op with a key (or key list) and a value (bytes, int, list of bytes) part; return (status, body).")
      .def("call", &Channel::call, py::arg("op"), py::arg("body"), py::arg("within_us"),
           "Send op with an encoded body; return (status, body) of its reply.")
      .def("post", &Channel::post, py::arg("op"), py::arg("keys"), py::arg("value"), py::arg("within_us"),
           "Send a request like request() without waiting for its reply; return (0, None), or an earlier failure.")
      .def("flush", &Channel::flush, "Read the replies owed to posted requests; return (0, None) or a failure.")
      .def_property_readonly("pending", &Channel::pending, "Replies owed to posted requests.")
      .def_readwrite("max_size", &Channel::max_size, "The server's max_value_size: larger bodies are not sent.");
}
