"""Views of arguments and writes: strides, in-place updates, aliasing and overlapping memory."""
