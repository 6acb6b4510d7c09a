--[[
  Replication fencing on a Redis Cluster (`--- @include "fence"`). A master acknowledges a script before its
  replica has it (replication is asynchronous), so a replica promoted after its master died may lack the last
  writes the master acknowledged, writes whose outbox entries may be completed already and whose pushes clients
  already hold. State continued from there would be a consistent but older state at a version clients have seen.
  So rebuild.lua stamps the user's meta with the replication id of the master that writes it (`term`), and every
  script treats state stamped with another id as missing: it is rebuilt from the database at a new epoch, and
  clients resync. A promotion gives the new master a new replication id; keys migrated to another master by a
  resharding carry the old one, so a moved user is rebuilt once too. On a single Redis (no cluster) the stamp is
  '-' and never checked: a restart there loses everything at once, which "missing" already covers. State written
  before stamps existed is fenced on a cluster node (rebuilt once) and not on a single Redis.
]]

-- Built only when a stamp is not '-' (a cluster node) or a rebuild stamps new state: every function defined at the
-- top of a script is a new closure on every call.
local function fencing()
  -- The replication id of this node's current term (INFO's master_replid; a replica reports its master's).
  local function replication_term()
    return string.match(rcall('INFO', 'replication'), 'master_replid:(%w+)')
  end

  -- Whether this node is a cluster node (read by pcall: only rebuilds and state written before stamps ask).
  local function cluster_node()
    local id = redis.pcall('CLUSTER', 'MYID')
    if type(id) == 'string' then return true end
    if string.find(tostring(id.err), 'cluster support disabled', 1, true) then return false end
    -- CLUSTER renamed or refused: fencing would switch itself off without a word.
    error({ err = 'ERR tally fence: CLUSTER MYID answered ' .. tostring(id.err) })
  end

  return {
    -- The stamp new state gets: this master's replication id on a cluster node, '-' on a single Redis.
    node_term = function()
      if not cluster_node() then return '-' end
      local term = replication_term()
      if not term then error({ err = 'ERR tally fence: INFO replication names no master_replid' }) end
      return term
    end,
    -- State stamped by another term (or written before stamps, on a cluster node).
    fenced = function(term)
      if not term then return cluster_node() end
      return term ~= replication_term()
    end,
  }
end

-- State stamped by another term (or written before stamps, on a cluster node) is treated as missing; '-' (a single
-- Redis) never is.
local function fenced(term)
  return term ~= '-' and fencing().fenced(term)
end
