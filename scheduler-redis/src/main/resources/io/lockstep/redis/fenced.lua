-- A value that only accepts access carrying a fencing token at least as high as the highest it has seen.
-- KEYS[1] the value's hash {fence, value}  ARGV[1] token  ARGV[2] admit | write  ARGV[3] value (write)
-- admit: raises the fence to the token. write: stores the value and raises the fence.
-- Returns 1 when accepted, 0 when refused (a higher token was seen).
local token = tonumber(ARGV[1])
local fence = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
if token < fence then
  return 0
end
if ARGV[2] == 'write' then
  redis.call('HSET', KEYS[1], 'fence', token, 'value', ARGV[3])
else
  redis.call('HSET', KEYS[1], 'fence', token)
end
return 1
