--[[
  Replication fencing on a Redis Cluster (`--- @include "fence"`). A master acknowledges a script before its
  replica has it (replication is asynchronous), so a replica promoted after its master died may lack the last
  writes the master acknowledged, writes whose outbox entries may be completed already and whose pushes clients
  already hold. State continued from there would be a consistent but older state at a version clients have seen.
  So rebuild.lua stamps the user's meta with the replication id of the master that creates it (`term`), and every
  script treats state stamped with another id as missing: it is rebuilt from the database at a new epoch, and
  clients resync. A promotion gives the new master a new replication id; keys migrated to another master by a
  resharding carry the old one, so a moved user is rebuilt once too. On a single Redis (no cluster) nothing is
  stamped and nothing is checked: a restart there loses everything at once, which "missing" already covers.
]]

-- The replication id of this node's current term (INFO's master_replid; a replica reports its master's).
local function replication_term()
  return string.match(rcall('INFO', 'replication'), 'master_replid:(%w+)')
end

-- The term to stamp new state with: this node's on a cluster node, nil on a single Redis (read by pcall: rebuilds
-- are rare, the hot scripts only compare a stamp that exists).
local function cluster_term()
  local id = redis.pcall('CLUSTER', 'MYID')
  if type(id) ~= 'string' then return nil end
  return replication_term()
end

-- State stamped by another term is treated as missing.
local function fenced(term)
  return term ~= nil and term ~= false and term ~= replication_term()
end
