-- Names that look alike are one name. Names are [A-Za-z0-9_-] and unique in any letter case, but "aIice" (a capital
-- i) or "a1ice" reads as "alice" in most fonts, so anyone could sign up as someone's double. A name's skeleton maps
-- the ASCII look-alikes to one spelling, in the letter case they are shown in (I, 1 and l to l; 0 to O; rn to m; vv
-- to w, VV to W): "AIice" is "Alice"'s double, while "ALICE" is the same name in any case anyway. A sign-up whose
-- skeleton another account has is refused as taken (docs/security.md, "Look-alike names"). Sign-ups check it under
-- a transaction-scoped advisory lock on the skeleton, not a unique index: a database may already hold two such
-- names from before, and they keep working.

CREATE FUNCTION tally_name_skeleton(p_name TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT replace(replace(replace(translate(p_name, 'I10', 'llO'), 'rn', 'm'), 'vv', 'w'), 'VV', 'W')
$$;

CREATE INDEX "User_name_skeleton_idx" ON "User"(tally_name_skeleton("name"));
