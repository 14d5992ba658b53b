package dev.cart.proxy.config;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * What a configuration record's component allows, beyond its Java type: the annotations {@link Schema}
 * reads to describe each key and {@link ConfigValidator} checks. A component's type says the rest (an
 * {@code int} is an integer, an enum one of its constants in lower case, a record a section).
 */
final class Constraints {
    private Constraints() {}

    /** An integer in [min, max] (a max of at least {@link Integer#MAX_VALUE} reads {@code >= min}). */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.RECORD_COMPONENT)
    @interface Bounds {
        long min();

        long max();
    }

    /** A number in [min, max]. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.RECORD_COMPONENT)
    @interface RealBounds {
        double min();

        double max();
    }

    /** A string that is not blank. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.RECORD_COMPONENT)
    @interface NotBlank {}

    /** A string that is one of these. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.RECORD_COMPONENT)
    @interface OneOf {
        String[] value();
    }

    /** An HTTP error status in [400, 599] (or, on a list, each element one). */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.RECORD_COMPONENT)
    @interface HttpStatus {}

    /** May be null: the key may be left unset (its meaning is then the record's to say). */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.RECORD_COMPONENT)
    @interface Nullable {}

    /**
     * Not a key of its own: the keys of the section that the routing policies describe
     * ({@code RoutingPolicyProvider.settings()}), as the files set them, handed to the policy.
     */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.RECORD_COMPONENT)
    @interface PolicyKeys {}
}
