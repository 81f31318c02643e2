"""Neural-network ops: convolution, pooling, normalization, softmax, losses, embedding, resampling, padding."""
