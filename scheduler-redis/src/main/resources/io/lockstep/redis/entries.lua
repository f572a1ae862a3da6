-- Redlock: which of these slots of one job this master has in its running index at all (expired or
-- not): RedlockRuns drops a minority's stale entry only where a majority has none.
-- KEYS[1] running index  ARGV the slots (epoch ms)
-- Returns per slot 1 if it has an entry, else 0.
local has = {}
for i = 1, #ARGV do
  has[i] = redis.call('ZSCORE', KEYS[1], ARGV[i]) and 1 or 0
end
return has
