package io.lockstep.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** A Lua script (a resource beside this class, or a short inline one) with its SHA-1 for {@code EVALSHA}. Immutable. */
record LuaScript(String name, String source, String sha) {

    /**
     * A script resource, with each line {@code --! include other.lua} replaced by that resource's
     * text (a piece several scripts share, as the fencing-token rule in {@code fence.lua}).
     */
    static LuaScript load(String name) {
        StringBuilder source = new StringBuilder();
        for (String line : read(name).split("\n", -1)) {
            source.append(line.startsWith("--! include ") ? read(line.substring("--! include ".length()).trim()) : line).append('\n');
        }
        return of(name, source.substring(0, source.length() - 1));
    }

    private static String read(String name) {
        try (InputStream in = LuaScript.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("script resource " + name + " is missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Every script made so far, by SHA-1: to name the one a server refused. */
    private static final java.util.Map<String, LuaScript> BY_SHA = new java.util.concurrent.ConcurrentHashMap<>();

    static LuaScript of(String name, String source) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-1").digest(source.getBytes(StandardCharsets.UTF_8));
            LuaScript script = new LuaScript(name, source, HexFormat.of().formatHex(digest));
            BY_SHA.put(script.sha(), script);
            return script;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The script a server message names by its SHA-1 (Redis 7: {@code script: <sha>}; 6.2: {@code call to f_<sha>}), if it is one of ours. */
    static java.util.Optional<LuaScript> named(String message) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?:script: |call to f_)([0-9a-f]{40})").matcher(message == null ? "" : message);
        return m.find() ? java.util.Optional.ofNullable(BY_SHA.get(m.group(1))) : java.util.Optional.empty();
    }

    /** The Redis commands the script runs, upper case, sorted: what an ACL user must be granted. */
    java.util.SortedSet<String> commands() {
        java.util.SortedSet<String> commands = new java.util.TreeSet<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("redis\\.call\\('([A-Za-z]+)'").matcher(source);
        while (m.find()) {
            commands.add(m.group(1).toUpperCase(java.util.Locale.ROOT));
        }
        return commands;
    }
}
