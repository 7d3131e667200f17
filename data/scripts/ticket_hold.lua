-- ticket_hold.lua: hold N tickets of an event for one customer, for a limited time.
--
-- A hold is a soft reservation: it counts against the event's free tickets until it
-- expires or until ticket_prepare.lua turns it into an order. Holds live in a sorted set
-- scored by their expiry time in ms, so every call first frees the holds whose time is up:
-- no background job is needed, and an expired hold never blocks a sale.
--
-- The inventory hash (KEYS[1]) is created by the application, e.g.
--   HSET event:{42} available 100 held 0 reserved 0 sold 0
-- where available = tickets neither reserved nor sold, held = tickets in live holds
-- (part of available), so free = available - held.
--
-- KEYS[1]  inventory hash, e.g. event:{42}
-- KEYS[2]  holds sorted set, e.g. event:{42}:holds (member = customer, score = expiry ms)
-- KEYS[3]  hold sizes hash, e.g. event:{42}:hold_qty (customer -> tickets)
-- ARGV[1]  customer id
-- ARGV[2]  tickets to hold, >= 1; a new hold replaces the customer's previous one
-- ARGV[3]  hold time to live in ms, >= 1
-- ARGV[4]  current time in ms (optional: when omitted, the server clock is read with TIME;
--          passing it keeps the script deterministic and lets tests control the clock)
--
-- Returns {1, free, expires_at_ms} when the hold is granted (free counted after the hold),
--         {0, free, 0} when there are not enough free tickets (nothing changes but the
--         cleanup of expired holds).
-- Errors: "ERR ..." for bad arguments, "NOEVENT ..." when KEYS[1] has no `available` field.
--
-- redis-cli --eval data/scripts/ticket_hold.lua event:{42} event:{42}:holds event:{42}:hold_qty , alice 2 600000

local inventory, holds, sizes = KEYS[1], KEYS[2], KEYS[3]
local customer = ARGV[1]
local quantity = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

if not customer or customer == '' then
  return redis.error_reply('ERR customer id is required')
end
if not quantity or quantity < 1 or quantity % 1 ~= 0 then
  return redis.error_reply('ERR ticket count must be a positive integer')
end
if not ttl or ttl < 1 or ttl % 1 ~= 0 then
  return redis.error_reply('ERR hold ttl must be a positive integer (ms)')
end
if ARGV[4] == nil or ARGV[4] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
elseif not now then
  return redis.error_reply('ERR now must be a time in ms')
end

local available = tonumber(redis.call('HGET', inventory, 'available'))
if not available then
  return redis.error_reply('NOEVENT ' .. inventory .. ' has no available field')
end

-- Free the holds that expired at or before now.
local expired = redis.call('ZRANGEBYSCORE', holds, '-inf', now)
if #expired > 0 then
  local freed = 0
  for _, who in ipairs(expired) do
    freed = freed + (tonumber(redis.call('HGET', sizes, who)) or 0)
    redis.call('HDEL', sizes, who)
  end
  redis.call('ZREMRANGEBYSCORE', holds, '-inf', now)
  redis.call('HINCRBY', inventory, 'held', -freed)
end

local held = tonumber(redis.call('HGET', inventory, 'held')) or 0
local mine = tonumber(redis.call('HGET', sizes, customer)) or 0
local free = available - held
if quantity > free + mine then
  return {0, free, 0}
end

local expires_at = now + ttl
redis.call('HSET', sizes, customer, quantity)
redis.call('ZADD', holds, expires_at, customer)
redis.call('HINCRBY', inventory, 'held', quantity - mine)
return {1, free + mine - quantity, expires_at}
