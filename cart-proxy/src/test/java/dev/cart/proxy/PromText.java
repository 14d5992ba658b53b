package dev.cart.proxy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** A parsed Prometheus text exposition: one sample per series, for tests. */
final class PromText {

    record Sample(String name, Map<String, String> labels, double value) {}

    final List<Sample> samples = new ArrayList<>();
    final Map<String, String> types = new TreeMap<>();

    /** Parses {@code text}; fails on any line that is not a comment, blank, or {@code name{labels} value}. */
    static PromText parse(String text) {
        PromText p = new PromText();
        for (String line : text.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            if (line.startsWith("# TYPE ")) {
                String[] parts = line.substring(7).split(" ");
                p.types.put(parts[0], parts[1]);
                continue;
            }
            if (line.startsWith("#")) {
                continue;
            }
            int brace = line.indexOf('{');
            int lastSpace = line.lastIndexOf(' ');
            String name;
            Map<String, String> labels = new TreeMap<>();
            if (brace >= 0 && brace < lastSpace) {
                name = line.substring(0, brace);
                int close = line.lastIndexOf('}');
                parseLabels(line.substring(brace + 1, close), labels, line);
            } else {
                name = line.substring(0, lastSpace);
            }
            if (!name.matches("[a-zA-Z_:][a-zA-Z0-9_:]*")) {
                throw new AssertionError("bad metric name in: " + line);
            }
            p.samples.add(new Sample(name, labels, Double.parseDouble(line.substring(lastSpace + 1))));
        }
        return p;
    }

    private static void parseLabels(String s, Map<String, String> out, String line) {
        int i = 0;
        while (i < s.length()) {
            int eq = s.indexOf('=', i);
            String key = s.substring(i, eq);
            if (s.charAt(eq + 1) != '"') {
                throw new AssertionError("bad label in: " + line);
            }
            StringBuilder v = new StringBuilder();
            int j = eq + 2;
            for (; s.charAt(j) != '"'; j++) {
                char c = s.charAt(j);
                if (c == '\\') {
                    j++;
                    char n = s.charAt(j);
                    v.append(n == 'n' ? '\n' : n);
                } else {
                    v.append(c);
                }
            }
            out.put(key, v.toString());
            i = j + 1;
            if (i < s.length() && s.charAt(i) == ',') {
                i++;
            }
        }
    }

    /** The value of the one series of {@code name} with exactly these labels (given as k, v, k, v...); 0 if absent. */
    double value(String name, String... kv) {
        Map<String, String> want = new TreeMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            want.put(kv[i], kv[i + 1]);
        }
        for (Sample s : samples) {
            if (s.name().equals(name) && s.labels().equals(want)) {
                return s.value();
            }
        }
        return 0.0;
    }

    /** Sum over every series of {@code name} whose labels include these. */
    double sum(String name, String... kv) {
        double total = 0;
        for (Sample s : samples) {
            if (!s.name().equals(name)) {
                continue;
            }
            boolean match = true;
            for (int i = 0; i < kv.length; i += 2) {
                if (!kv[i + 1].equals(s.labels().get(kv[i]))) {
                    match = false;
                    break;
                }
            }
            if (match) {
                total += s.value();
            }
        }
        return total;
    }

    /** Every series of {@code name}, one per line, for failure messages. */
    String dump(String name) {
        StringBuilder b = new StringBuilder();
        for (Sample s : named(name)) {
            b.append(s.name()).append(s.labels()).append(' ').append(s.value()).append('\n');
        }
        return b.toString();
    }

    List<Sample> named(String name) {
        return samples.stream().filter(s -> s.name().equals(name)).toList();
    }
}
