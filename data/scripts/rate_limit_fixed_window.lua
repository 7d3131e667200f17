-- rate_limit_fixed_window.lua: allow at most LIMIT hits per fixed window of WINDOW ms.
--
-- The first hit of a window creates the counter and gives it the window as its TTL; the
-- counter disappears when the window ends, and the next hit opens a new window. Every
-- hit counts, refused ones too (a client that keeps hammering stays refused until the
-- window ends, not longer). A counter found without a TTL (created by hand, or PERSISTed)
-- is given one, so a client can never be locked out forever.
--
-- KEYS[1]  counter key, e.g. rl:fixed:{user:17}:search
-- ARGV[1]  limit: hits allowed per window, >= 0
-- ARGV[2]  window length in ms, >= 1
--
-- Returns {allowed, remaining, ttl_ms}: allowed is 1 or 0, remaining is the number of hits
-- still allowed in this window, ttl_ms the time until the window resets.
-- Errors: "ERR ..." for bad arguments.
--
-- redis-cli --eval data/scripts/rate_limit_fixed_window.lua rl:fixed:{user:17}:search , 10 60000

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
if not limit or limit < 0 or limit % 1 ~= 0 then
  return redis.error_reply('ERR limit must be a non-negative integer')
end
if not window or window < 1 or window % 1 ~= 0 then
  return redis.error_reply('ERR window must be a positive integer (ms)')
end

local count = redis.call('INCR', key)
if count == 1 then
  redis.call('PEXPIRE', key, window)
end
local ttl = redis.call('PTTL', key)
if ttl < 0 then
  redis.call('PEXPIRE', key, window)
  ttl = window
end

if count > limit then
  return {0, 0, ttl}
end
return {1, limit - count, ttl}
