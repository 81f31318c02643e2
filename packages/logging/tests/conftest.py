import pytest

import ember.logs


@pytest.fixture(autouse=True)
def default_logs():
    """Every test starts and ends with the default settings: no artifacts, WARNING, no trace."""
    ember.logs.set_logs()
    yield
    ember.logs.set_logs()
    ember.logs.set_output_file(None)
    ember.logs.set_trace_dir(None)
    ember.logs.set_ranks(None)
    ember.logs.set_rank(None)
