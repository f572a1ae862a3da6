package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/**
 * A worker's least-privilege ACL user, as the README gives it: everything Lockstep does works
 * under it, and a user missing one permission is refused at start ({@link RedisLockProvider#ping})
 * with one line naming what it may not run, not at the first claim.
 */
public class AclTest {

    /** The README's line, after {@code ACL SETUSER <user> on ><password>}. Worker ITs use it too. */
    public static final List<String> WORKER_RULES = List.of("~lockstep:*", "resetchannels", "-@all",
            "+evalsha", "+eval", "+ping", "+hello", "+auth", "+client|setname", "+info",
            "+del", "+exists", "+get", "+hdel", "+hget", "+hgetall", "+hincrby", "+hmget", "+hset", "+hsetnx", "+mget", "+pexpire", "+pttl", "+set",
            "+time", "+xadd", "+zadd", "+zrange", "+zrangebyscore", "+zrem", "+zremrangebyscore", "+zscore", "+xrevrange", "+persist",
            "+sadd", "+sismember", "+xinfo", "+xrange");

    private static LocalRedisServer server;
    private static RedisClient admin;

    @BeforeAll
    static void start() {
        server = LocalRedisServer.start();
        admin = RedisClient.create(server.host(), server.port());
    }

    @AfterAll
    static void stop() {
        admin.close();
        server.close();
    }

    private static void user(String name, List<String> rules) {
        List<String> args = new ArrayList<>(List.of("SETUSER", name, "reset", "on", ">pw-" + name));
        args.addAll(rules);
        admin.sendCommand(redis.clients.jedis.Protocol.Command.ACL, args.toArray(new String[0]));
    }

    private static RedisLockProvider as(String name) {
        return RedisLockProvider.builder().uri(server.uri()).user(name).password("pw-" + name).build();
    }

    @Test
    void theLeastPrivilegeUserCanDoEverythingLockstepDoes() throws Exception {
        user("worker", WORKER_RULES);
        try (RedisLockProvider p = as("worker")) {
            p.ping(); // claims, renews, looks, completes and recovers a probe slot
        }
        try (RedisClient client = RedisClient.builder()
                .hostAndPort(new redis.clients.jedis.HostAndPort(server.host(), server.port()))
                .clientConfig(redis.clients.jedis.DefaultJedisClientConfig.builder().user("worker").password("pw-worker").build()).build();
             RedisLocks locks = RedisLocks.on(client)) {
            try (RedisLock lock = locks.tryAcquire("acl-lock", Duration.ofSeconds(5)).orElseThrow()) {
                assertThat(lock.extend()).isTrue();
                FencedValue value = FencedValue.of(client, "lockstep:stock:{acl}");
                assertThat(value.write(lock.fencingToken(), "1")).isTrue();
            }
        }
    }

    /** Every command any script runs is in the line (a script that gains one fails here, not at a user's first late outcome). */
    @Test
    void theLineGrantsEveryCommandOfEveryScript() throws Exception {
        java.nio.file.Path scripts = java.nio.file.Path.of(System.getProperty("basedir", ".")).toAbsolutePath().normalize()
                .resolve("src/main/resources/io/lockstep/redis");
        try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.list(scripts)) {
            List<String> names = files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".lua")).toList();
            assertThat(names).hasSizeGreaterThan(10);
            for (String name : names) {
                for (String command : LuaScript.load(name).commands()) {
                    assertThat(WORKER_RULES).as("%s runs %s", name, command).contains("+" + command.toLowerCase(java.util.Locale.ROOT));
                }
            }
        }
    }

    /**
     * The rules the README and PRODUCTION-REDIS tell operators to type are exactly the ones tested
     * here: a command added to the scripts and to this list but not to the docs fails this test.
     */
    @Test
    void theDocumentedAclLineIsTheTestedOne() throws Exception {
        java.nio.file.Path root = java.nio.file.Path.of(System.getProperty("basedir", ".")).toAbsolutePath().normalize().getParent();
        for (String doc : List.of("README.md", "docs/PRODUCTION-REDIS.md")) {
            List<String> lines = java.nio.file.Files.readAllLines(root.resolve(doc)).stream()
                    .filter(l -> l.contains("ACL SETUSER lockstep-worker on >PASSWORD ")).toList();
            assertThat(lines).as("the worker's ACL line in %s", doc).hasSize(1);
            String rules = lines.get(0).substring(lines.get(0).indexOf(">PASSWORD ") + ">PASSWORD ".length()).trim();
            assertThat(List.of(rules.split("\\s+"))).as("the rules in %s", doc).isEqualTo(WORKER_RULES);
        }
    }

    @Test
    void aUserMissingACommandTheScriptsRunIsRefusedAtStartWithOneLine() {
        user("no-zadd", WORKER_RULES.stream().filter(r -> !r.equals("+zadd")).toList());
        try (RedisLockProvider p = as("no-zadd")) {
            assertThatThrownBy(p::ping).isInstanceOf(LockException.class)
                    .hasMessageContaining("permission denied to the ACL user: claim.lua runs")
                    .hasMessageContaining("ZADD")
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n").doesNotContain("pw-"));
        }
    }

    @Test
    void aUserMissingACommandOutsideTheScriptsIsRefusedNamingIt() {
        user("no-hget", WORKER_RULES.stream().filter(r -> !r.equals("+hget")).toList());
        try (RedisLockProvider p = as("no-hget")) {
            assertThatThrownBy(p::ping).isInstanceOf(LockException.class)
                    .hasMessageContaining("permission denied to the ACL user").hasMessageContaining("'hget'");
        }
    }
}
