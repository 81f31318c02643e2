"""Native support code the generated kernels link to at load time (the thread pool)."""
