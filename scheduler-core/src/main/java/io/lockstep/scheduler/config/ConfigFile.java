package io.lockstep.scheduler.config;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads a config file's text, refusing what is not a config before the YAML parser sees it: a file
 * too large (checked from its size, so a huge file costs nothing to refuse), a missing one, or one
 * that is not UTF-8 (named by line and byte offset). Stateless.
 */
final class ConfigFile {

    /** The largest config file read: room for tens of thousands of jobs, no room for a mistake. */
    static final long MAX_BYTES = 16L * 1024 * 1024;
    /** At most this many aliases of collections ({@code *anchor}) per file: no billion laughs. */
    static final int MAX_ALIASES = 50;

    private ConfigFile() {}

    /**
     * @throws ConfigException with one problem when the file cannot be read as a config
     */
    static String read(Path file) {
        String source = file.toString();
        byte[] bytes;
        try {
            long size = Files.size(file);
            if (size > MAX_BYTES) {
                // Checked before reading: a huge file must not cost its size in memory to reject.
                throw new ConfigException(List.of(new ConfigProblem(source, 0, "", "file is " + size
                        + " bytes; a config may be at most " + MAX_BYTES + " bytes (is this the right file?)")));
            }
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new ConfigException(List.of(new ConfigProblem(source, 0, "", "file not found")));
        } catch (IOException e) {
            throw new ConfigException(List.of(new ConfigProblem(source, 0, "", "cannot read file: "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()))));
        }
        return decode(source, bytes);
    }

    /** UTF-8, strictly: a byte sequence that is not UTF-8 is a problem on its line. */
    private static String decode(String source, byte[] bytes) {
        CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(bytes);
        CharBuffer out = CharBuffer.allocate(bytes.length);
        CoderResult result = decoder.decode(in, out, true);
        if (result.isError()) {
            int line = 1;
            for (int i = 0; i < in.position(); i++) {
                if (bytes[i] == '\n') {
                    line++;
                }
            }
            throw new ConfigException(List.of(new ConfigProblem(source, line, "", String.format(
                    "not valid UTF-8: byte 0x%02x at offset %d (save the file as UTF-8)", bytes[in.position()] & 0xff, in.position()))));
        }
        decoder.flush(out);
        return out.flip().toString();
    }
}
