import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig, CLUSTER_SLOTS, clusterOptions, groupBySlot, hashTagOf, keySlot, parseRedisNodes } from '#libs/config';
import { shardOf, shardTag, StreamKeys } from '#libs/events';
import { presenceKeys, queuePrefix } from '#libs/queue';

// Redis Cluster key placement, pure: slots, hash tags, the event-stream shards, the configuration.
// (test/e2e/redis-cluster.test.ts runs the apps on a real 3-node cluster.)

const BASE_ENV = { DATABASE_URL: 'postgres://x@127.0.0.1/db', REDIS_URL: 'redis://127.0.0.1:6379' };
const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';

describe('cluster slots', () => {
  it('hashes keys as CLUSTER KEYSLOT does', () => {
    // Values from the cluster spec and from redis-cli CLUSTER KEYSLOT (Redis 7.0).
    assert.equal(keySlot('123456789'), 12_739);
    assert.equal(keySlot('foo'), 12_182);
    assert.equal(keySlot('bar'), 5_061);
    assert.equal(keySlot(''), 0);
  });

  it('hashes only a non-empty hash tag, the first one', () => {
    assert.equal(hashTagOf('user:{1000}:following'), '1000');
    assert.equal(keySlot('{user1000}.following'), keySlot('{user1000}.followers'));
    assert.equal(hashTagOf('foo{}{bar}'), 'foo{}{bar}', 'an empty first tag means the whole key');
    assert.equal(hashTagOf('foo{{bar}}zap'), '{bar', 'the tag ends at the first } after the first {');
    assert.equal(hashTagOf('foo{bar}{zap}'), 'bar');
    assert.equal(hashTagOf('no tag}{'), 'no tag}{');
  });

  it('groups keys by slot, keeping the order of first appearance and every index once', () => {
    const keys = ['{a}1', '{b}1', '{a}2', 'foo', '{b}2', '{a}3'];
    const groups = groupBySlot(keys);
    assert.deepEqual(groups, [[0, 2, 5], [1, 4], [3]]);
    assert.deepEqual(groupBySlot([]), []);
  });
});

describe('event-stream keys', () => {
  it('keeps the single-server names: tagged by the session, one reader group', () => {
    const keys = new StreamKeys(null);
    assert.equal(keys.stream(SESSION), `yuxi:session-events:{${SESSION}}`);
    assert.equal(keys.fence(SESSION), `yuxi:event-fence:{${SESSION}}`);
    assert.equal(keys.group(SESSION), 0);
    assert.equal(keys.groups, 1);
    assert.equal(keys.wake(0, 'hub-1'), 'yuxi:hub-wake:{hub-1}');
  });

  it('on a cluster puts every key of a session, and the wake key of its group, in its shard’s slot', () => {
    const keys = new StreamKeys(16);
    for (let i = 0; i < 200; i++) {
      const session = `01a22bfa-8bdf-7435-8da3-${String(i).padStart(12, '0')}`;
      const shard = keys.group(session);
      assert.equal(shard, shardOf(session, 16));
      const slot = keySlot(keys.stream(session));
      assert.equal(keySlot(keys.fence(session)), slot);
      assert.equal(keySlot(keys.wake(shard, 'hub-1')), slot, 'XREAD over the group and its wake key stays in one slot');
      assert.ok(keys.stream(session).endsWith(`:${session}`), 'each session keeps its own stream within the shard');
    }
  });

  it('spreads the sessions over every shard, and each shard into its own share of the slots', () => {
    const shards = 16;
    const counts = new Array<number>(shards).fill(0);
    for (let i = 0; i < 1600; i++) counts[shardOf(`session-${i}`, shards)] = (counts[shardOf(`session-${i}`, shards)] ?? 0) + 1;
    assert.ok(Math.min(...counts) > 50, `every shard gets sessions: ${counts.join(',')}`);
    for (const total of [1, 3, 16, 256]) {
      const slots = Array.from({ length: total }, (_, shard) => keySlot(`{${shardTag(shard, total)}}`));
      slots.forEach((slot, shard) => {
        assert.ok(slot >= Math.floor((shard * CLUSTER_SLOTS) / total) && slot < Math.floor(((shard + 1) * CLUSTER_SLOTS) / total), `shard ${shard} of ${total}: slot ${slot}`);
      });
    }
  });
});

describe('other keys on a cluster', () => {
  it('tags the worker presence set and keys alike on a cluster, and keeps the old names on one server', () => {
    const single = presenceKeys(false);
    assert.equal(single.set, 'yuxi:workers');
    assert.equal(single.worker('w1'), 'yuxi:workers:w1');
    const clustered = presenceKeys(true);
    assert.equal(keySlot(clustered.worker('w1')), keySlot(clustered.set));
    assert.equal(keySlot(clustered.worker('another')), keySlot(clustered.set));
  });

  it("hash-tags BullMQ's prefix per queue on a cluster only", () => {
    const single = new AppConfig(BASE_ENV);
    assert.deepEqual(queuePrefix(single, 'session-dispatch'), {}, "one server: BullMQ's default prefix, existing jobs stay found");
    const cluster = new AppConfig({ ...BASE_ENV, REDIS_CLUSTER_NODES: '127.0.0.1:7000' });
    const { prefix } = queuePrefix(cluster, 'session-dispatch');
    assert.equal(prefix, 'bull:{session-dispatch}');
    // BullMQ's keys are `<prefix>:<queue>:<type>`: all in the queue's slot, the queues in different ones.
    assert.equal(keySlot(`${prefix}:session-dispatch:wait`), keySlot(`${prefix}:session-dispatch:meta`));
    assert.notEqual(keySlot(`${prefix}:session-dispatch:wait`), keySlot(`${queuePrefix(cluster, 'maintenance').prefix}:maintenance:wait`));
  });
});

describe('REDIS_CLUSTER_NODES', () => {
  it('is off by default: REDIS_URL is one server', () => {
    assert.equal(new AppConfig(BASE_ENV).redisCluster, null);
    assert.equal(new AppConfig({ ...BASE_ENV, REDIS_CLUSTER_NODES: ' ' }).redisCluster, null);
  });

  it('reads host:port seeds (IPv6 in brackets) and the stream shard count', () => {
    const config = new AppConfig({ ...BASE_ENV, REDIS_CLUSTER_NODES: 'redis-0.redis:6379, 10.0.0.2:7001,[::1]:7002', REDIS_CLUSTER_STREAM_SHARDS: '32' });
    assert.deepEqual(config.redisCluster, {
      nodes: [
        { host: 'redis-0.redis', port: 6379 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      streamShards: 32,
    });
    assert.equal(new AppConfig({ ...BASE_ENV, REDIS_CLUSTER_NODES: '127.0.0.1:7000' }).redisCluster?.streamShards, 16);
  });

  it('stops the process at start on a malformed entry or shard count', () => {
    for (const bad of ['127.0.0.1', '127.0.0.1:', ':7000', '127.0.0.1:0', '127.0.0.1:65536', 'a:1,,b:2', 'redis://127.0.0.1:7000', '::1:7000']) {
      assert.throws(() => parseRedisNodes(bad), /REDIS_CLUSTER_NODES must be host:port entries/, bad);
    }
    for (const bad of ['0', '257', 'x']) {
      assert.throws(() => new AppConfig({ ...BASE_ENV, REDIS_CLUSTER_NODES: '127.0.0.1:7000', REDIS_CLUSTER_STREAM_SHARDS: bad }), /REDIS_CLUSTER_STREAM_SHARDS/, bad);
    }
  });
});

describe('cluster client options', () => {
  it("keeps each client's options: offline queue and laziness on the cluster client, the rest on every node", () => {
    assert.deepEqual(clusterOptions('redis://127.0.0.1:7000', { connectionName: 'yuxi-auth', commandTimeout: 1_000, maxRetriesPerRequest: 1, enableOfflineQueue: false }), {
      enableOfflineQueue: false,
      redisOptions: { connectionName: 'yuxi-auth', commandTimeout: 1_000, maxRetriesPerRequest: 1 },
    });
    assert.deepEqual(clusterOptions('redis://127.0.0.1:7000', { lazyConnect: true, connectionName: 'yuxi-signals-sub' }), { lazyConnect: true, redisOptions: { connectionName: 'yuxi-signals-sub' } });
  });

  it("applies REDIS_URL's credentials and TLS to every node, and refuses a database other than 0", () => {
    assert.deepEqual(clusterOptions('rediss://app:p%40ss@cache.example:6380/0', { maxRetriesPerRequest: null }).redisOptions, {
      username: 'app',
      password: 'p@ss',
      tls: { servername: 'cache.example' },
      maxRetriesPerRequest: null,
    });
    assert.throws(() => clusterOptions('redis://127.0.0.1:7000/2', {}), /database 2/);
    assert.throws(() => clusterOptions('http://127.0.0.1:7000', {}), /redis:\/\/ or rediss:\/\//);
  });
});
