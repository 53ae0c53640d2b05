"""ident_framework."""
