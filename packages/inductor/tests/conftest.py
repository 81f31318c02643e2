import sys
from pathlib import Path

# the shared helpers (inductor_testing.py) import by name, as the other packages' test helpers do
sys.path.insert(0, str(Path(__file__).parent))
