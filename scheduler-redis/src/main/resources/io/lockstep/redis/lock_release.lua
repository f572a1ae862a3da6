-- Deletes a lock only if the token still owns it. KEYS[1] lock  ARGV[1] owner token
-- Returns 1 when it was ours, 0 otherwise (it expired, or another holder has it now).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
