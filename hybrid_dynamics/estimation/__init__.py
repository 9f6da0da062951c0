"""State estimation: passive joints, floating base, contacts, damage detection."""
