package io.lockstep.spring;

import io.lockstep.redis.LocalRedisServer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real redis-server for a test class's applications ({@code @RegisterExtension static}): started
 * before its first test, stopped after its last.
 */
final class StarterRedis implements BeforeAllCallback, AfterAllCallback {

    private LocalRedisServer server;

    @Override
    public void beforeAll(ExtensionContext context) {
        server = LocalRedisServer.start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        server.close();
    }

    /** {@code redis://127.0.0.1:<port>}. */
    String uri() {
        return server.uri();
    }
}
