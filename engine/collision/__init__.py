"""Collision detection: broad phase and the contacts of rigid bodies."""
