"""Claims on the public hostnames Capstan writes DNS records for (`service.py`)."""
