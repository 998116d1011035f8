"""A user's package with a batpolicy policy (docs/add_a_policy.md)."""
