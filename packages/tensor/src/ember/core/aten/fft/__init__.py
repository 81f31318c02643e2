"""The discrete Fourier transforms: ``_fft_c2c``, ``_fft_r2c`` and ``_fft_c2r`` and ``ember.fft``."""
