"""Views and shape ops: views, rearranging, joining and copying."""
