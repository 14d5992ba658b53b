package dev.cart.sim;

import java.util.SplittableRandom;

/**
 * Deterministic filler text: lower-case pseudo-words separated by spaces, about four characters per
 * word (the character-mode token), produced from a seed. The same seed and length always give the same
 * text; different seeds give different text from the first word on (with overwhelming probability).
 */
final class Filler {

    private static final String[] WORDS = {
        "a", "an", "as", "at", "be", "by", "do", "go", "if", "in", "is", "it", "me", "no", "of", "on", "or", "so", "to",
        "up", "we", "add", "age", "air", "all", "and", "any", "arm", "art", "ask", "bad", "bag", "bed", "big", "box",
        "boy", "bus", "but", "buy", "can", "car", "cat", "cup", "cut", "day", "dog", "dry", "ear", "eat", "egg", "end",
        "eye", "far", "fat", "few", "fit", "fly", "for", "fun", "gas", "get", "god", "gun", "guy", "hat", "her", "him",
        "his", "hit", "hot", "how", "ice", "job", "key", "kid", "law", "lay", "leg", "let", "lie", "lot", "low", "man",
        "map", "may", "mix", "new", "not", "now", "odd", "off", "oil", "old", "one", "our", "out", "own", "pay", "per",
        "pet", "put", "red", "run", "sea", "see", "set", "she", "sit", "six", "sky", "son", "sun", "tax", "tea", "ten",
        "the", "tie", "tip", "top", "toy", "try", "two", "use", "war", "way", "wet", "who", "why", "win", "yes", "yet",
        "you", "able", "area", "away", "baby", "back", "ball", "bank", "base", "bear", "beat", "bill", "bird", "blue",
        "boat", "body", "book", "both", "call", "card", "care", "case", "cell", "city", "club", "cold", "come", "cost",
        "data", "deal", "deep", "door", "down", "draw", "drop", "each", "east", "easy", "edge", "face", "fact", "fall",
        "farm", "fast", "fear", "feel", "file", "fill", "film", "find", "fine", "fire", "firm", "fish", "five", "food",
        "foot", "form", "four", "free", "full", "fund", "game", "girl", "give", "goal", "gold", "good", "grow", "hair",
        "half", "hand", "hang", "hard", "head", "hear", "heat", "help", "here", "high", "hold", "home", "hope", "hour",
        "idea", "into", "item", "join", "just", "keep", "kind", "know", "land", "last", "late", "lead", "left", "less",
        "life", "line", "list", "live", "long", "look", "lose", "loss", "love", "main", "make", "many", "mind", "miss",
        "more", "most", "move", "much", "must", "name", "near", "need", "news", "next", "nice", "note", "once", "only",
        "open", "over", "page", "pain", "part", "pass", "past", "pick", "plan", "play", "poor", "pull", "push", "race",
        "rate", "read", "real", "rest", "rich", "rise", "risk", "road", "rock", "role", "room", "rule", "safe", "same",
        "save", "seat", "seek", "seem", "sell", "send", "show", "side", "sign", "sing", "size", "skin", "slow", "some",
        "song", "soon", "sort", "star", "stay", "step", "stop", "such", "sure", "take", "talk", "task", "team", "tell",
        "term", "test", "than", "that", "them", "then", "they", "thus", "time", "tree", "true", "turn", "type", "unit",
        "upon", "very", "view", "vote", "wait", "walk", "wall", "want", "wear", "week", "well", "west", "what", "when",
        "wide", "wife", "will", "wind", "wish", "with", "word", "work", "yard", "year", "about", "above", "after",
        "again", "agent", "agree", "allow", "among", "apply", "argue", "avoid", "begin", "black", "board", "bring",
        "build", "carry", "catch", "cause", "chair", "check", "child", "civil", "claim", "class", "clear", "close",
        "coach", "could", "court", "cover", "crime", "daily", "death", "dream", "drive", "early", "earth", "enjoy",
        "enter", "event", "every", "exist", "field", "fight", "final", "first", "floor", "focus", "force", "front",
        "glass", "great", "green", "group", "guess", "happy", "heart", "heavy",
    };

    private Filler() {}

    /** {@code chars} characters of filler text from {@code seed}. */
    static String text(long seed, int chars) {
        StringBuilder sb = new StringBuilder(chars + 8);
        append(sb, seed, chars);
        return sb.toString();
    }

    /** Appends exactly {@code chars} characters of filler text from {@code seed} to {@code sb}. */
    static void append(StringBuilder sb, long seed, int chars) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int end = sb.length() + chars;
        while (sb.length() < end) {
            if (sb.length() > end - chars) {
                sb.append(' ');
            }
            sb.append(WORDS[rnd.nextInt(WORDS.length)]);
        }
        sb.setLength(end);
    }

    /** The {@code i}-th word of a deterministic sequence for {@code seed} (used for generated tokens). */
    static String word(long seed, int i) {
        long z = seed + 0x9E3779B97F4A7C15L * (i + 1);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return WORDS[(int) Long.remainderUnsigned(z, WORDS.length)];
    }

    /** A seed derived from a base seed and labels, so that each part of a workload has its own stream. */
    static long seed(long base, long... parts) {
        long h = base ^ 0x632BE59BD9B4E019L;
        for (long p : parts) {
            h = mix(h ^ p) + 0x9E3779B97F4A7C15L;
        }
        return mix(h);
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
