"""Idempotency-Key: a retried POST, PUT, PATCH or DELETE is answered once (see `middleware`)."""
