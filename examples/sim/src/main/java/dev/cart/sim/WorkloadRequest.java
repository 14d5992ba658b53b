package dev.cart.sim;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.extract.Endpoint;
import java.util.List;
import java.util.Objects;

/**
 * One request of a {@link Workload}: when it is sent, to which endpoint, its prompt and how many tokens
 * it asks for. Immutable.
 *
 * <p>A request with a session is part of a conversation: a client sends a session's requests in order and
 * never two at once (the next turn waits for the previous answer).
 */
public final class WorkloadRequest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final long arrivalNanos;
    private final Endpoint endpoint;
    private final List<Message> messages;
    private final String prompt;
    private final int maxTokens;
    private final String session;
    private final String reply;
    /** The model the request names; null for the workload's default model. */
    private final String model;

    private WorkloadRequest(
            long arrivalNanos,
            Endpoint endpoint,
            List<Message> messages,
            String prompt,
            int maxTokens,
            String session,
            String reply,
            String model) {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("max tokens must be at least 1, was " + maxTokens);
        }
        this.arrivalNanos = arrivalNanos;
        this.endpoint = Objects.requireNonNull(endpoint);
        this.messages = messages;
        this.prompt = prompt;
        this.maxTokens = maxTokens;
        this.session = session;
        this.reply = reply;
        this.model = model;
    }

    /** A chat request ({@code /v1/chat/completions}, or {@code /v1/messages} for {@link Endpoint#MESSAGES}). */
    public static WorkloadRequest chat(Endpoint endpoint, List<Message> messages, int maxTokens, String session) {
        return chat(endpoint, messages, maxTokens, session, null);
    }

    /**
     * A chat request whose answer is {@code reply}: the text the replica generates, which a later request
     * of the workload carries back as the assistant's message (a conversation's next turn). The replica
     * caches the blocks of the prompt followed by this text, and a host learning answers records the
     * conversation followed by it. {@code reply} may be null: the answer is then text no later request
     * contains.
     */
    public static WorkloadRequest chat(
            Endpoint endpoint, List<Message> messages, int maxTokens, String session, String reply) {
        if (endpoint == Endpoint.COMPLETIONS) {
            throw new IllegalArgumentException("a chat request needs a chat endpoint");
        }
        return new WorkloadRequest(0, endpoint, List.copyOf(messages), null, maxTokens, session, reply, null);
    }

    /** A plain completion request ({@code /v1/completions}). */
    public static WorkloadRequest completion(String prompt, int maxTokens, String session) {
        return new WorkloadRequest(
                0, Endpoint.COMPLETIONS, null, Objects.requireNonNull(prompt), maxTokens, session, null, null);
    }

    /** The same request arriving at {@code nanos} after the start of the run. */
    public WorkloadRequest at(long nanos) {
        return new WorkloadRequest(nanos, endpoint, messages, prompt, maxTokens, session, reply, model);
    }

    /**
     * The same request naming {@code model} (a base model or an adapter): routed only to replicas serving
     * it, and cached by a replica apart from other models' blocks. Null: the workload's default model.
     */
    public WorkloadRequest withModel(String model) {
        return new WorkloadRequest(arrivalNanos, endpoint, messages, prompt, maxTokens, session, reply, model);
    }

    /** The model the request names, or null for the workload's default. */
    public String model() {
        return model;
    }

    /** Arrival time, nanoseconds after the start of the run (open-loop arrivals). */
    public long arrivalNanos() {
        return arrivalNanos;
    }

    public Endpoint endpoint() {
        return endpoint;
    }

    /** The chat messages; empty for a completion. */
    public List<Message> messages() {
        return messages == null ? List.of() : messages;
    }

    /** The completion prompt; null for a chat request. */
    public String prompt() {
        return prompt;
    }

    public int maxTokens() {
        return maxTokens;
    }

    /** The session (user or conversation) id, or null for an independent request. */
    public String session() {
        return session;
    }

    /**
     * The text of the answer a later request of the workload carries back (see
     * {@link #chat(Endpoint, List, int, String, String)}), or null when no later request contains it.
     */
    public String reply() {
        return reply;
    }

    /** The prompt text the replica computes: the chat template applied to the messages, or the prompt. */
    public String replicaPrompt() {
        return messages == null ? ChatTemplate.renderCompletion(prompt) : ChatTemplate.render(messages);
    }

    /**
     * The HTTP request body a client would send: OpenAI chat or completions shape, or Anthropic messages
     * shape (system messages go to the {@code system} field).
     */
    public byte[] body(String model, boolean stream) {
        return body(model, stream, messages);
    }

    /**
     * The body of this chat request with an assistant message holding {@code answer} appended to its
     * messages: what the conversation's next turn starts with, as a host learning the answer builds it.
     */
    byte[] continuationBody(String model, String answer) {
        if (messages == null) {
            throw new IllegalStateException("a completion has no conversation to continue");
        }
        List<Message> next = new java.util.ArrayList<>(messages.size() + 1);
        next.addAll(messages);
        next.add(Message.assistant(answer));
        return body(model, false, next);
    }

    private byte[] body(String model, boolean stream, List<Message> messages) {
        ObjectNode root = JSON.createObjectNode();
        root.put("model", model);
        switch (endpoint) {
            case COMPLETIONS -> root.put("prompt", prompt);
            case CHAT_COMPLETIONS -> {
                ArrayNode arr = root.putArray("messages");
                for (Message m : messages) {
                    arr.addObject().put("role", m.role()).put("content", m.content());
                }
            }
            case MESSAGES -> {
                StringBuilder system = new StringBuilder();
                ArrayNode arr = JSON.createArrayNode();
                for (Message m : messages) {
                    if (m.role().equals("system")) {
                        system.append(system.length() == 0 ? "" : "\n").append(m.content());
                    } else {
                        arr.addObject().put("role", m.role()).put("content", m.content());
                    }
                }
                if (system.length() > 0) {
                    root.put("system", system.toString());
                }
                root.set("messages", arr);
            }
        }
        root.put("max_tokens", maxTokens);
        if (stream) {
            root.put("stream", true);
            if (endpoint != Endpoint.MESSAGES) {
                root.putObject("stream_options").put("include_usage", true);
            }
        }
        try {
            return JSON.writeValueAsBytes(root);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise a request body", e);
        }
    }

    /** Lengths only, never the text. */
    @Override
    public String toString() {
        return "WorkloadRequest[" + endpoint.path() + " at=" + arrivalNanos / 1_000_000 + "ms messages="
                + messages().size() + " maxTokens=" + maxTokens + (session == null ? "" : " session=" + session)
                + "]";
    }
}
