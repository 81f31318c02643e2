"""Sorting and searching: sort, top-k, order statistics, bucketization and unique."""
