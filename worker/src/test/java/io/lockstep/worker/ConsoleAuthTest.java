package io.lockstep.worker;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.config.HttpUser;
import java.io.ByteArrayInputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Who a request is ({@link ConsoleAuth}), the forms' tokens ({@link ConsoleForms}) and the users
 * file's lines ({@code lockstep user}).
 */
class ConsoleAuthTest {

    private static final String TOKEN = "lst_0123456789abcdefghij";

    private static List<HttpUser> users() {
        return HttpUser.parse("alice:operator:" + ConsoleAuth.passwordHash("alice-password") + "\n"
                + "victor:viewer:" + ConsoleAuth.passwordHash("victor-password") + "\n"
                + "robot:operator:" + ConsoleAuth.tokenHash(TOKEN) + "\n");
    }

    private static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void basicAndBearerCredentialsProveAUserAndNothingElseDoes() {
        ConsoleAuth auth = new ConsoleAuth(users());
        assertThat(auth.authenticate(basic("alice", "alice-password"))).hasValueSatisfying(u -> assertThat(u.operator()).isTrue());
        assertThat(auth.authenticate(basic("victor", "victor-password"))).hasValueSatisfying(u -> assertThat(u.operator()).isFalse());
        assertThat(auth.authenticate("Bearer " + TOKEN)).hasValueSatisfying(u -> assertThat(u.name()).isEqualTo("robot"));
        assertThat(auth.authenticate("bearer   " + TOKEN + " ")).as("the scheme in any case").isPresent();
        assertThat(auth.authenticate(basic("alice", "victor-password"))).isEmpty();
        assertThat(auth.authenticate(basic("mallory", "alice-password"))).isEmpty();
        assertThat(auth.authenticate(basic("robot", TOKEN))).as("a token is not a password").isEmpty();
        assertThat(auth.authenticate("Bearer " + TOKEN + "x")).isEmpty();
        assertThat(auth.authenticate("Basic !!!not-base64")).isEmpty();
        assertThat(auth.authenticate(basic("alice", "x".repeat(100)))).as("past bcrypt's 72 bytes: refused, not thrown").isEmpty();
        assertThat(auth.authenticate("Digest alice")).isEmpty();
        assertThat(auth.authenticate(null)).isEmpty();
        long checks = auth.bcrypts();
        assertThat(auth.authenticate(basic("alice", "alice-password"))).as("remembered, still right").isPresent();
        assertThat(auth.bcrypts()).as("a header that passed is not checked again within a minute").isEqualTo(checks);
        assertThat(auth.authenticate(basic("alice", "wrong"))).isEmpty();
        assertThat(auth.authenticate(basic("alice", "wrong"))).isEmpty();
        assertThat(auth.bcrypts()).as("a wrong one always is").isEqualTo(checks + 2);
    }

    /**
     * A reloaded users file (SIGHUP) counts from the next request: a removed user and a changed
     * role count at once although the header passed a moment ago, and the forms of pages served
     * before no longer pass.
     */
    @Test
    void aReloadedUsersFileCountsAtOnceForRememberedHeadersAndOldForms() {
        List<HttpUser> before = users();
        ConsoleAuth auth = new ConsoleAuth(before);
        ConsoleForms forms = new ConsoleForms(before);
        String cookie = ConsoleForms.newCookie();
        long now = 1_800_000_000L;
        String token = forms.token("alice", "pause", cookie, now);
        assertThat(auth.authenticate(basic("alice", "alice-password"))).hasValueSatisfying(u -> assertThat(u.operator()).isTrue());
        assertThat(auth.authenticate("Bearer " + TOKEN)).isPresent();
        String aliceHash = before.get(0).hash();
        List<HttpUser> after = HttpUser.parse("alice:viewer:" + aliceHash + "\n"
                + "victor:viewer:" + before.get(1).hash() + "\n");
        auth.replace(after);
        forms.replace(after);
        long checks = auth.bcrypts();
        assertThat(auth.authenticate(basic("alice", "alice-password"))).as("her new role, not the remembered one")
                .hasValueSatisfying(u -> assertThat(u.operator()).isFalse());
        assertThat(auth.bcrypts()).as("checked again under the new file").isEqualTo(checks + 1);
        assertThat(auth.authenticate("Bearer " + TOKEN)).as("a removed token, remembered before").isEmpty();
        assertThat(forms.valid(token, "alice", "pause", cookie, now)).as("a form of a page served before").isFalse();
        assertThat(forms.valid(forms.token("alice", "pause", cookie, now), "alice", "pause", cookie, now)).isTrue();
    }

    /** Without the decoy hash a name nobody has is refused in microseconds, a wrong password in bcrypt's time. */
    @Test
    void aNameNobodyHasIsRefusedInTheTimeOfAWrongPassword() {
        ConsoleAuth auth = new ConsoleAuth(users());
        List<Long> unknown = new ArrayList<>();
        List<Long> wrong = new ArrayList<>();
        for (int i = 0; i < 11; i++) {
            long t = System.nanoTime();
            assertThat(auth.authenticate(basic("nobody-" + i, "alice-password"))).isEmpty();
            unknown.add(System.nanoTime() - t);
            t = System.nanoTime();
            assertThat(auth.authenticate(basic("alice", "wrong-" + i))).isEmpty();
            wrong.add(System.nanoTime() - t);
        }
        Collections.sort(unknown);
        Collections.sort(wrong);
        double ratio = (double) unknown.get(5) / wrong.get(5);
        assertThat(ratio).as("median unknown %s ns, wrong %s ns", unknown.get(5), wrong.get(5)).isBetween(0.5, 2.0);
    }

    @Test
    void aFormsTokenIsGoodForItsUserFormAndCookieAndForTwelveHours() {
        List<HttpUser> file = users();
        ConsoleForms forms = new ConsoleForms(file);
        String cookie = ConsoleForms.newCookie();
        long now = 1_800_000_000L;
        String token = forms.token("alice", "pause", cookie, now);
        assertThat(forms.valid(token, "alice", "pause", cookie, now + 60)).isTrue();
        assertThat(forms.valid(token, "victor", "pause", cookie, now)).as("another user").isFalse();
        assertThat(forms.valid(token, "alice", "trigger", cookie, now)).as("another form").isFalse();
        assertThat(forms.valid(token, "alice", "pause", ConsoleForms.newCookie(), now)).as("another cookie").isFalse();
        assertThat(forms.valid(token, "alice", "pause", cookie, now + ConsoleForms.VALID_FOR + 1)).as("stale").isFalse();
        assertThat(forms.valid(token.replace(Long.toString(now), Long.toString(now + 100)), "alice", "pause", cookie, now + 100))
                .as("its time changed").isFalse();
        assertThat(forms.valid(null, "alice", "pause", cookie, now)).isFalse();
        assertThat(forms.valid("garbage", "alice", "pause", cookie, now)).isFalse();
        assertThat(new ConsoleForms(HttpUser.parse("bob:operator:" + ConsoleAuth.tokenHash("other"))).valid(token, "alice", "pause", cookie, now))
                .as("another users file: another key").isFalse();
        assertThat(new ConsoleForms(List.copyOf(file)).valid(token, "alice", "pause", cookie, now)).as("another worker with the same file").isTrue();
        assertThat(ConsoleForms.cookieOf("a=b; " + ConsoleForms.COOKIE + "=" + cookie + "; c=d")).contains(cookie);
        assertThat(ConsoleForms.cookieOf(ConsoleForms.COOKIE + "=<script>")).isEmpty();
        assertThat(ConsoleForms.setCookie(cookie)).contains("SameSite=Strict", "HttpOnly");
    }

    @Test
    void lockstepUserPrintsALineTheWorkerTakes() {
        java.io.InputStream stdin = System.in;
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit;
        try {
            System.setIn(new ByteArrayInputStream("a-long-password\n".getBytes(StandardCharsets.UTF_8)));
            exit = WorkerMain.execute(new PrintWriter(out, true), new PrintWriter(err, true), "user", "--name", "carol", "--role", "operator");
        } finally {
            System.setIn(stdin);
        }
        assertThat(exit).as(err.toString()).isZero();
        HttpUser carol = HttpUser.parse(out.toString()).get(0);
        assertThat(new ConsoleAuth(List.of(carol)).authenticate(basic("carol", "a-long-password"))).contains(carol);

        StringWriter tokenOut = new StringWriter();
        StringWriter tokenErr = new StringWriter();
        assertThat(WorkerMain.execute(new PrintWriter(tokenOut, true), new PrintWriter(tokenErr, true), "user", "--name", "ci",
                "--role", "viewer", "--token")).isZero();
        String token = tokenErr.toString().strip().replaceFirst(".*: ", "");
        HttpUser ci = HttpUser.parse(tokenOut.toString()).get(0);
        assertThat(tokenOut.toString()).doesNotContain(token);
        assertThat(new ConsoleAuth(List.of(ci)).authenticate("Bearer " + token)).contains(ci);

        StringWriter badErr = new StringWriter();
        assertThat(WorkerMain.execute(new PrintWriter(new StringWriter(), true), new PrintWriter(badErr, true), "user", "--name", "x",
                "--role", "admin", "--token")).isEqualTo(WorkerMain.BAD_INPUT);
        assertThat(badErr.toString()).contains("error: the role of x must be viewer or operator, but was \"admin\"");
    }
}
