package dev.cart.sim;

import java.util.Objects;

/**
 * One chat message of a workload request.
 *
 * @param role    {@code system}, {@code user} or {@code assistant}
 * @param content the message text
 */
public record Message(String role, String content) {

    public Message {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(content, "content");
    }

    public static Message system(String content) {
        return new Message("system", content);
    }

    public static Message user(String content) {
        return new Message("user", content);
    }

    public static Message assistant(String content) {
        return new Message("assistant", content);
    }

    /** Lengths only: a message's text never goes into logs. */
    @Override
    public String toString() {
        return "Message[" + role + ", " + content.length() + " chars]";
    }
}
