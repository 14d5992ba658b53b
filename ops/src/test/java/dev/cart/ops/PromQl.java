package dev.cart.ops;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Just enough PromQL for the live check: the signals of an alert expression, and Grafana's variables
 * expanded in a dashboard query.
 *
 * <p>An alert's expression returns series only while it fires ({@code ratio > 0.05}), so the live check
 * evaluates what it compares instead: {@link #signals} splits the expression at its top-level comparison
 * ({@code == != > < >= <=}) and set ({@code and or unless}) operators, drops the number literals among
 * the operands and splits again inside an operand that is wholly in parentheses. A comparison nested in
 * a function call or in arithmetic ({@code a / (b > 0)}) stays inside its operand: it filters, it is
 * not a threshold. The scan skips strings and what is inside braces and brackets, so label matchers
 * ({@code status!="5xx"}, {@code reason=~"a|b"}) and durations are never split. No state; not a parser.
 */
final class PromQl {

    private static final Pattern NUMBER =
            Pattern.compile("[-+]?(?:(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][-+]?\\d+)?|Inf|NaN)", Pattern.CASE_INSENSITIVE);
    /** Modifiers that may open an operand after a binary operator. */
    private static final Pattern MODIFIER =
            Pattern.compile("^(?:bool\\b|(?:on|ignoring|group_left|group_right)\\s*(?:\\([^)]*\\))?)\\s*");

    private static final Pattern VARIABLE = Pattern.compile("\\$(?:\\{(\\w+)}|(\\w+))");

    private PromQl() {}

    /** The operands of {@code expr}'s thresholds and set operations (the expression itself when it has none). */
    static List<String> signals(String expr) {
        List<String> out = new ArrayList<>();
        collect(expr.strip(), out);
        return out;
    }

    private static void collect(String expr, List<String> out) {
        List<String> operands = split(expr);
        if (operands.size() == 1) {
            String only = operands.get(0);
            if (wrapped(only)) {
                collect(only.substring(1, only.length() - 1).strip(), out);
            } else if (!NUMBER.matcher(only).matches()) {
                out.add(only);
            }
            return;
        }
        for (String o : operands) {
            collect(o, out);
        }
    }

    /** {@code expr} cut at its top-level comparison and set operators, each operand stripped of modifiers. */
    static List<String> split(String expr) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        int start = 0;
        int i = 0;
        while (i < expr.length()) {
            char c = expr.charAt(i);
            if (c == '"' || c == '\'' || c == '`') {
                i = endOfString(expr, i);
                continue;
            }
            if (c == '(' || c == '{' || c == '[') {
                depth++;
            } else if (c == ')' || c == '}' || c == ']') {
                depth--;
            } else if (depth == 0) {
                int len = operatorLength(expr, i);
                if (len > 0) {
                    out.add(operand(expr.substring(start, i)));
                    i += len;
                    start = i;
                    continue;
                }
            }
            i++;
        }
        if (depth != 0) {
            throw new IllegalArgumentException("unbalanced brackets in " + expr);
        }
        out.add(operand(expr.substring(start)));
        return out;
    }

    /** The length of the comparison or set operator at {@code i} (0 if none starts there). */
    private static int operatorLength(String s, int i) {
        char c = s.charAt(i);
        char next = i + 1 < s.length() ? s.charAt(i + 1) : 0;
        if ((c == '=' || c == '!' || c == '>' || c == '<') && next == '=') {
            return 2;
        }
        if (c == '>' || c == '<') {
            return 1;
        }
        for (String word : new String[] {"and", "or", "unless"}) {
            if (s.startsWith(word, i)
                    && (i == 0 || !isWordChar(s.charAt(i - 1)))
                    && (i + word.length() == s.length() || !isWordChar(s.charAt(i + word.length())))) {
                return word.length();
            }
        }
        return 0;
    }

    private static boolean isWordChar(char c) {
        return Character.isLetterOrDigit(c) || c == '_' || c == ':';
    }

    private static int endOfString(String s, int open) {
        char quote = s.charAt(open);
        for (int i = open + 1; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && quote != '`') {
                i++;
            } else if (c == quote) {
                return i + 1;
            }
        }
        throw new IllegalArgumentException("unterminated string in " + s);
    }

    private static String operand(String text) {
        String s = text.strip();
        Matcher m = MODIFIER.matcher(s);
        while (m.find() && m.end() > 0) {
            s = s.substring(m.end()).strip();
            m = MODIFIER.matcher(s);
        }
        if (s.isEmpty()) {
            throw new IllegalArgumentException("empty operand in " + text);
        }
        return s;
    }

    /** True if {@code s} is one parenthesised expression: its opening bracket closes at its end. */
    private static boolean wrapped(String s) {
        if (!s.startsWith("(") || !s.endsWith(")")) {
            return false;
        }
        int depth = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\'' || c == '`') {
                i = endOfString(s, i) - 1;
            } else if (c == '(') {
                depth++;
            } else if (c == ')' && --depth == 0) {
                return i == s.length() - 1;
            }
        }
        return false;
    }

    /**
     * {@code query} with every Grafana variable ({@code $name}, {@code ${name}}) replaced by its value;
     * fails on a variable without one.
     */
    static String expand(String query, Map<String, String> values) {
        Matcher m = VARIABLE.matcher(query);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String name = m.group(1) != null ? m.group(1) : m.group(2);
            String value = values.get(name);
            if (value == null) {
                throw new IllegalArgumentException("no value for $" + name + " in " + query);
            }
            m.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        m.appendTail(out);
        return out.toString();
    }
}
