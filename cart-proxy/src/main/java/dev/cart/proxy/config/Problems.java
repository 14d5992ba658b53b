package dev.cart.proxy.config;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The problems found so far, each written {@code file: key: problem} (the file that set the key, or the
 * last file that set an enclosing one; no file for text parsed without one, or a configuration built in
 * code), and where each key came from. Not thread-safe: one per load.
 */
final class Problems {
    private final List<String> list = new ArrayList<>();
    private final Map<String, String> origins = new LinkedHashMap<>();

    /** A problem of {@code key} (a path such as {@code cache.threshold} or {@code workers[0].url}). */
    void add(String key, String problem) {
        String file = originOf(key);
        list.add((file == null ? "" : file + ": ") + key + ": " + problem);
    }

    /** A problem of a whole file (unreadable, not YAML). */
    void file(String file, String problem) {
        list.add(file + ": " + problem);
    }

    void origin(String key, String file) {
        if (file != null) {
            origins.put(key, file);
        }
    }

    /** Records {@code file} as the origin of {@code key} and of every key below it. */
    void originOfTree(String key, JsonNode value, String file) {
        origin(key, file);
        if (value.isObject()) {
            for (Map.Entry<String, JsonNode> e : value.properties()) {
                originOfTree(key + "." + e.getKey(), e.getValue(), file);
            }
        }
    }

    private String originOf(String key) {
        String k = key;
        while (true) {
            String file = origins.get(k);
            if (file != null) {
                return file;
            }
            int cut = Math.max(k.lastIndexOf('.'), k.lastIndexOf('['));
            if (cut <= 0) {
                return null;
            }
            k = k.substring(0, cut);
        }
    }

    boolean isEmpty() {
        return list.isEmpty();
    }

    List<String> list() {
        return List.copyOf(list);
    }

    void throwIfAny() throws ConfigException {
        if (!list.isEmpty()) {
            throw new ConfigException(list);
        }
    }
}
