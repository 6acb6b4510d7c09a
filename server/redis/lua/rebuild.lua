--[[
  Create one user's unread state from the database's truth, merge that truth into existing state, or replace it.
  KEYS[1..5] the unread scripts' keys: meta, convs, gone, times, ment (includes/unread.lua)
  KEYS[6..15] the keys of the layout before it ({u:<id>}:meta, :unread, :seen, :read, :gone, :times, :aged, :ment,
  :mcount, :state), which these scripts never read: every rebuild deletes them (an instance of the earlier version
  still running during a rolling restart rebuilds its own, from the database)
  ARGV[1] a new epoch (unique string)
  ARGV[2] 'merge' or 'replace'
  ARGV[3..] 8-tuples, one per current membership: conversation id, the conversation's lastSeq, the user's
  lastReadSeq, muteVersion, muted (0|1), markVersion, markAt, markClearedVersion
  then optionally 'mentions' and pairs conversation id, seq: the messages above the cursor that mention the user
  then optionally 'own' and pairs conversation id, seq: the user's own messages above the cursor
  then optionally 'deleted' and pairs conversation id, seq: others' messages above the cursor their senders
  deleted (their mentions, if Redis holds any, go)
  then optionally 'gone' and conversation ids the user has left (or that were deleted): each is forgotten as
  remove.lua forgets it and marked "gone", so an event computed before the departure and applied after Redis lost
  the state (and remove.lua's mark with it) cannot bring it back. A departure wins over a membership listed with
  it (the memberships may have been read just before the departure committed: a membership is never re-created),
  and so does a "gone" mark already in Redis, which no rebuild removes, in any mode.
  then, with unread expiry on only: 'ttl', the expiry in ms, optionally 'now' and the instant (ms) expiry is
  judged at (tests pass it; without it, the server's TIME), and triples conversation id, seq, createdAt ms of
  the user's unread messages (seq above lastReadSeq; of those already expired, the highest seq per conversation
  is enough). They are tracked as apply.lua tracks them, then expired at "now".
  Missing state, fenced state (written under another replication term, includes/fence.lua) or 'replace': written
  from the database's registers alone, the sums from the values, version 1, epoch ARGV[1]. Fenced state is
  replaced only by a caller that read the database after seeing it fenced: ARGV[3] 'term' and ARGV[4] the term the
  'fenced' answer named, before the tuples; without them (or with an older term) nothing is written and the answer
  is { '', 0, 0, 'fenced', 0, term }. Then optionally 'ticket' and the ticket ticket.lua gave the caller before its
  database read: state written from scratch (missing, fenced or 'replace') is written only if the meta still holds
  that ticket and it names this node's term; otherwise Redis lost the user's keys, or the term changed, after the
  read (which may then miss events applied in between) and the answer is the same 'fenced' one: take a ticket and
  read again. Without a ticket nothing is checked. The meta is stamped with this master's replication term ('-' on
  a single Redis).
  'merge' into existing state: every register merges as apply.lua would merge it (a rebuild that read the
  database before a later event was applied must not undo it); if any value
  changed, or a stored sum differs from its parts, the sums are recomputed and the epoch replaced, so every
  client resyncs instead of patching one conversation. Otherwise nothing is written.
  Existing state whose stored sums differ from their parts (before anything is merged, in either mode) is drift
  from outside the scripts: the sums written are the parts' sums, and meta's `repairs` counts it. apply.lua never
  sums, so this is where such drift is repaired (after snapshot.lua refused it, or reconciliation found it).
  'replace' is for reconciliation only, when Redis holds more than the database (a register above the truth,
  a conversation the user is no longer in, an expired mark the database does not explain), which merging cannot undo.
  Returns { epoch, version, total, status, totalMentions } with status 'created', 'merged', 'replaced' or
  'unchanged', or { '', 0, 0, 'fenced', 0, term } (above).
]]
local rcall = redis.call
--- @include "layout"
--- @include "unread"
--- @include "sums"
--- @include "ttl"
--- @include "gone"
--- @include "fence"

local epoch_new = ARGV[1]
local mode = ARGV[2]
local function bad(what)
  return redis.error_reply('ERR tally rebuild: ' .. what .. ' (expected an epoch, merge|replace, optionally term and a term, optionally ticket and a ticket, (conversation, lastSeq, lastReadSeq, muteVersion, muted, markVersion, markAt, markCleared) tuples, optionally mentions (conversation, seq) pairs, optionally own (conversation, seq) pairs, optionally deleted (conversation, seq) pairs, optionally gone conversations, optionally ttl, ms, [now, ms,] (conversation, seq, createdAt) triples)')
end
if epoch_new == nil or epoch_new == '' or (mode ~= 'merge' and mode ~= 'replace') then
  return bad('bad epoch or mode')
end
-- ARGV[3..last]: membership tuples; ARGV[mfirst..mlast]: mention pairs; ARGV[ofirst..olast]: own message pairs;
-- ARGV[dfirst..dlast]: deleted message pairs; ARGV[gfirst..glast]: departures;
-- ARGV[first..]: message triples.
-- ARGV[3], ARGV[4]: optionally 'term' and the replication term under which the caller saw the state fenced.
local seen_term = nil
local tfirst = 3
if ARGV[3] == 'term' then
  seen_term = ARGV[4]
  if seen_term == nil or seen_term == '' then return bad('bad term') end
  tfirst = 5
end
-- Then optionally 'ticket' and the ticket taken before the database read (ticket.lua).
local ticket = nil
if ARGV[tfirst] == 'ticket' then
  ticket = ARGV[tfirst + 1]
  if ticket == nil or ticket == '' then return bad('bad ticket') end
  tfirst = tfirst + 2
end
local i = tfirst
while i <= #ARGV and ARGV[i] ~= 'mentions' and ARGV[i] ~= 'own' and ARGV[i] ~= 'deleted' and ARGV[i] ~= 'gone'
  and ARGV[i] ~= 'ttl' do
  i = i + 8
end
if i > #ARGV + 1 then return bad('membership tuples cut short') end
local last = i - 1
local mfirst, mlast = i, i - 1
if ARGV[i] == 'mentions' then
  mfirst = i + 1
  i = i + 1
  while i <= #ARGV and ARGV[i] ~= 'own' and ARGV[i] ~= 'deleted' and ARGV[i] ~= 'gone' and ARGV[i] ~= 'ttl' do
    i = i + 2
  end
  if i > #ARGV + 1 then return bad('mention pairs cut short') end
  mlast = i - 1
end
local ofirst, olast = i, i - 1
if ARGV[i] == 'own' then
  ofirst = i + 1
  i = i + 1
  while i <= #ARGV and ARGV[i] ~= 'deleted' and ARGV[i] ~= 'gone' and ARGV[i] ~= 'ttl' do i = i + 2 end
  if i > #ARGV + 1 then return bad('own message pairs cut short') end
  olast = i - 1
end
local dfirst, dlast = i, i - 1
if ARGV[i] == 'deleted' then
  dfirst = i + 1
  i = i + 1
  while i <= #ARGV and ARGV[i] ~= 'gone' and ARGV[i] ~= 'ttl' do i = i + 2 end
  if i > #ARGV + 1 then return bad('deleted message pairs cut short') end
  dlast = i - 1
end
local gfirst, glast = i, i - 1
if ARGV[i] == 'gone' then
  gfirst = i + 1
  i = i + 1
  while i <= #ARGV and ARGV[i] ~= 'ttl' do i = i + 1 end
  glast = i - 1
end
local ttl = 0
local now_in = nil
local first = #ARGV + 1
if ARGV[i] == 'ttl' then
  ttl = tonumber(ARGV[i + 1])
  first = i + 2
  if ARGV[first] == 'now' then
    now_in = tonumber(ARGV[first + 1])
    if now_in == nil or now_in < 0 then return bad('bad now') end
    first = first + 2
  end
  if ttl == nil or ttl < 0 or (#ARGV - first + 1) % 3 ~= 0 then return bad('bad ttl section') end
end
for j = tfirst, last, 8 do
  if ARGV[j] == '' or (ttl > 0 and not numeric(ARGV[j])) then return bad('bad conversation at argument ' .. j) end
  for k = j + 1, j + 7 do
    local n = tonumber(ARGV[k])
    if n == nil or n < 0 then return bad('bad number at argument ' .. k) end
  end
  if ARGV[j + 4] ~= '0' and ARGV[j + 4] ~= '1' then return bad('muted is 0 or 1 at argument ' .. (j + 4)) end
end
for j = mfirst, mlast, 2 do
  local s = tonumber(ARGV[j + 1])
  if not numeric(ARGV[j]) or s == nil or s < 1 then return bad('bad mention pair at argument ' .. j) end
end
for j = ofirst, olast, 2 do
  local s = tonumber(ARGV[j + 1])
  if not numeric(ARGV[j]) or s == nil or s < 1 then return bad('bad own message pair at argument ' .. j) end
end
for j = dfirst, dlast, 2 do
  local s = tonumber(ARGV[j + 1])
  if not numeric(ARGV[j]) or s == nil or s < 1 then return bad('bad deleted message pair at argument ' .. j) end
end
for j = gfirst, glast do
  if ARGV[j] == '' then return bad('bad gone conversation at argument ' .. j) end
end
for j = first, #ARGV, 3 do
  local s, t = tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
  if not numeric(ARGV[j]) or s == nil or t == nil or s < 1 or t < 0 then
    return bad('bad message triple at argument ' .. j)
  end
end

local E, X = expiry(), extras()
local stamp = rcall('HMGET', KEYS[1], 'epoch', 'term')
local exists = stamp[1] ~= false
local term = fencing().node_term()
local is_fenced = exists and fenced(stamp[2])
if is_fenced and seen_term ~= term then
  -- The caller's database read may predate the promotion, and so miss events the old master applied and the
  -- replica kept: it must read again, now that it knows the term, and call with 'term'.
  return { '', 0, 0, 'fenced', 0, term }
end
-- Fenced state may lack what its old master acknowledged last: it is replaced, as if it were missing.
local fresh = not exists or mode == 'replace' or is_fenced
if fresh and ticket and (rcall('HGET', KEYS[1], 'ticket') ~= ticket or string.sub(ticket, 1, #term + 1) ~= term .. '/')
then
  -- The user's keys were lost since the caller took its ticket (or the term changed: a promoted replica may hold
  -- the ticket without what was written under it), so after its database read, perhaps with events applied in
  -- between: state from that read would miss them until reconciliation (their outbox entries are completed).
  return { '', 0, 0, 'fenced', 0, term }
end
if exists then
  local stored = rcall('HMGET', KEYS[1], 'total', 'mentions')
  local sum, sum_mentions = stored_sums()
  if (tonumber(stored[1]) or 0) ~= sum or (tonumber(stored[2]) or 0) ~= sum_mentions then
    rcall('HINCRBY', KEYS[1], 'repairs', 1)
  end
end
rcall('DEL', unpack(KEYS, 6, 15))
if fresh then
  -- Not KEYS[3]: a "gone" mark is always true (remove.lua sets it only after the departure committed).
  rcall('DEL', KEYS[2], KEYS[4], KEYS[5])
end
local left = {}
for _, conv in ipairs(rcall('HKEYS', KEYS[3])) do left[conv] = true end
for j = gfirst, glast do left[ARGV[j]] = true end
-- What clients see of every conversation, and the mute and mark registers: what a merge compares (the seen and
-- read registers may move without changing it, and then no client needs to resync).
local function everything()
  local out = {}
  local values = stored_values()
  for conv, r in pairs(values.records) do
    local shown = table.concat({ r[UNREAD], r[MENTIONS], r[MARKED], r[MUTE_V], r[MUTED], r[MARK_V], r[MARK_AT],
      r[CLEARED] }, ':')
    if shown ~= '0:0:0:0:0:0:0:0' then out[conv] = shown end
  end
  return out
end
local before = everything()

local records, order = {}, {}
-- Merges one membership's registers into its record (stored below, once derived, in the order given).
local function merge_membership(j)
  local conv = ARGV[j]
  local r = records[conv]
  if not r then
    r = parse_record(rcall('HGET', KEYS[2], conv))
    records[conv] = r
    order[#order + 1] = conv
  end
  local read_old = r[READ]
  r[SEEN] = math.max(r[SEEN], tonumber(ARGV[j + 1]))
  r[READ] = math.max(read_old, tonumber(ARGV[j + 2]))
  if r[READ] ~= read_old and ttl > 0 then
    E.forget_times(conv, math.max(read_old, r[AGED]), math.min(r[READ], r[SEEN]))
  end
  X.merge_state(r, tonumber(ARGV[j + 3]), tonumber(ARGV[j + 4]), tonumber(ARGV[j + 5]), tonumber(ARGV[j + 6]),
    tonumber(ARGV[j + 7]))
end
-- A conversation in `left` is not one any more.
for j = tfirst, last, 8 do
  if not left[ARGV[j]] then merge_membership(j) end
end
X.batch()
for j = mfirst, mlast, 2 do
  local r = records[ARGV[j]]
  if r then X.add_mention(ARGV[j], r, tonumber(ARGV[j + 1])) end
end
for j = ofirst, olast, 2 do
  local r = records[ARGV[j]]
  if r then X.add_own(ARGV[j], r, tonumber(ARGV[j + 1])) end
end
for j = dfirst, dlast, 2 do
  local r = records[ARGV[j]]
  if r then X.add_deleted(ARGV[j], r, tonumber(ARGV[j + 1])) end
end
X.flush()
-- A mention merged from before its message's deletion (the database read now has neither) goes.
for j = dfirst, dlast, 2 do
  if records[ARGV[j]] then rcall('ZREM', KEYS[5], X.mention_member(ARGV[j], tonumber(ARGV[j + 1]))) end
end
-- The departures listed may still hold values (merge mode); a conversation marked gone before holds none: nothing
-- writes to it after its mark.
local gone_at = E.now(now_in)
for j = gfirst, glast do drop_conversation(ARGV[j], gone_at) end
local cutoff = 0
if ttl > 0 then
  cutoff = E.now(now_in) - ttl
  E.batch()
  for j = first, #ARGV, 3 do
    local r = records[ARGV[j]]
    if r then E.track_message(ARGV[j], r, tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2]), cutoff) end
  end
  E.flush()
end
for _, conv in ipairs(order) do
  recompute(conv, records[conv])
  put_record(conv, records[conv])
end
if ttl > 0 then E.expire_before(cutoff) end

local sum, sum_mentions = stored_sums()
if stamp[2] ~= term then rcall('HSET', KEYS[1], 'term', term) end
if fresh then
  rcall('HSET', KEYS[1], 'total', sum, 'version', 1, 'epoch', epoch_new, 'mentions', sum_mentions)
  if exists then return { epoch_new, 1, sum, 'replaced', sum_mentions } end
  return { epoch_new, 1, sum, 'created', sum_mentions }
end

local after = everything()
local changed = false
for k, v in pairs(after) do
  if before[k] ~= v then changed = true end
end
for k, v in pairs(before) do
  if after[k] ~= v then changed = true end
end
local meta = rcall('HMGET', KEYS[1], 'epoch', 'version', 'total', 'mentions')
if not changed and tonumber(meta[3]) == sum and (tonumber(meta[4]) or 0) == sum_mentions then
  return { meta[1], tonumber(meta[2]) or 0, sum, 'unchanged', sum_mentions }
end
rcall('HSET', KEYS[1], 'total', sum, 'version', 1, 'epoch', epoch_new, 'mentions', sum_mentions)
return { epoch_new, 1, sum, 'merged', sum_mentions }
