-- Temporal's auto-setup creates and migrates its own databases (temporal,
-- temporal_visibility) with the landfall role; it needs the right to create them.
ALTER ROLE landfall CREATEDB;
