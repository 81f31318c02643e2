"""Attention kernels (FlashAttention-2 on the CPU and in Triton) behind one calling convention."""
