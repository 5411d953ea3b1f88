"""Collision handling beyond the kernels: fast bodies swept (sweep.py) and cloth kept off itself
(self_contact.py). The broad phase and the contacts are kernels: backend/*/contacts.py."""
