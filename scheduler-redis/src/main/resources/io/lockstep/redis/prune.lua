-- Redlock: drops from one master's running index the entries of one job that only a minority of
-- the masters report expired, when they are stale there: expired for longer than ARGV[2] ms by this
-- server's clock and not held by a lease of their record's token (what a recovery or claim that won
-- no majority, or a write that landed after its give-back, left behind). No majority calls such a
-- run dead, so nobody recovers it, and without this it would sit in the index (hiding real dead runs
-- behind runs.lua's limit, and making every claim's earliest lease end a time already past).
-- KEYS[1] running index; then per slot i (0-based): KEYS[3i+2..3i+4] slot record, the job's lease
-- (an exclusive job's: the marks of its group, see lease.lua), the slot's own lease (overlap: allow)
-- ARGV[1..n] the slots (epoch ms), one per key triple; ARGV[#ARGV - 1] the job's field prefix in the
-- marks ('<job>:'); ARGV[#ARGV] how long past its score an entry must be
-- Returns how many entries were dropped.
--! include lease.lua
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local age = tonumber(ARGV[#ARGV])
local f = ARGV[#ARGV - 1]
local dropped = 0
for i = 0, (#KEYS - 1) / 3 - 1 do
  local slot = ARGV[i + 1]
  local score = redis.call('ZSCORE', KEYS[1], slot)
  if score and tonumber(score) < now - age then
    local token = redis.call('HGET', KEYS[3 * i + 2], 'token')
    if not token or (lease_owner(KEYS[3 * i + 3], f, now) ~= token and redis.call('GET', KEYS[3 * i + 4]) ~= token) then
      redis.call('ZREM', KEYS[1], slot)
      dropped = dropped + 1
    end
  end
end
return dropped
