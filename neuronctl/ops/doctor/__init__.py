"""The doctor: its facts (each gathered once), checks, fixes and check runner."""
