"""Random ops: sampling factories, in-place fills, distributions and dropout."""
