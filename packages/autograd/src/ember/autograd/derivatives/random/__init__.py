"""Derivatives of random ops and dropout."""
