package dev.cart.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.annotation.ImportCandidates;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * In a servlet (Spring MVC) application CART logs one warning at start that it cannot route there, and why; in a
 * reactive one, none. The warning is one of the module's auto-configurations, so an application gets it by
 * having the jar.
 */
@ExtendWith(OutputCaptureExtension.class)
class ServletWarningTest {

    @Test
    void aServletApplicationGetsOneWarningSayingWhy(CapturedOutput output) {
        new WebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(CartServletWarning.class))
                .run(context -> {
                    assertEquals(null, context.getStartupFailure());
                    assertTrue(context.containsBean("cartServletWarningLogged"));
                });
        String log = output.getOut() + output.getErr();
        assertEquals(1, occurrences(log, CartServletWarning.MESSAGE), log);
        assertTrue(log.contains("WARN"), log);
        assertTrue(CartServletWarning.MESSAGE.contains("servlet gateway"), "it says why");
    }

    @Test
    void aReactiveApplicationGetsNone(CapturedOutput output) {
        new ReactiveWebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(CartServletWarning.class))
                .run(context -> assertFalse(context.containsBean("cartServletWarningLogged")));
        assertFalse((output.getOut() + output.getErr()).contains(CartServletWarning.MESSAGE));
    }

    @Test
    void theWarningIsAnAutoConfigurationOfTheModule() {
        assertTrue(ImportCandidates.load(AutoConfiguration.class, getClass().getClassLoader())
                .getCandidates()
                .contains(CartServletWarning.class.getName()));
    }

    private static int occurrences(String text, String part) {
        int n = 0;
        for (int at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + 1)) {
            n++;
        }
        return n;
    }
}
