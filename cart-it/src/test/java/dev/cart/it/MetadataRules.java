package dev.cart.it;

import static dev.cart.it.PublishedPomsTest.child;
import static dev.cart.it.PublishedPomsTest.children;
import static dev.cart.it.PublishedPomsTest.text;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.w3c.dom.Element;

/**
 * Maven Central's rules for a published POM (central.sonatype.org, "Requirements"): coordinates, name,
 * description, url, at least one license (name and url), at least one developer (a name), scm (connection,
 * developerConnection, url). And CART's own: no parent (cart-parent is not published), no dependency on
 * a CART artifact that is not published, no property left unresolved but {@code ${project.version}}.
 */
final class MetadataRules {

    private MetadataRules() {}

    static List<String> check(String artifactId, Element pom, Set<String> published) {
        List<String> problems = new ArrayList<>();
        for (String element : List.of("groupId", "artifactId", "version", "name", "description", "url")) {
            if (text(pom, element).isEmpty()) {
                problems.add(artifactId + ": no <" + element + ">");
            }
        }
        if (!text(pom, "artifactId").equals(artifactId)) {
            problems.add(artifactId + ": the POM says artifactId " + text(pom, "artifactId"));
        }
        List<Element> licenses = children(child(pom, "licenses"), "license");
        if (licenses.isEmpty()) {
            problems.add(artifactId + ": no <licenses><license>");
        }
        for (Element l : licenses) {
            if (text(l, "name").isEmpty() || text(l, "url").isEmpty()) {
                problems.add(artifactId + ": a license without a name or a url");
            }
        }
        List<Element> developers = children(child(pom, "developers"), "developer");
        if (developers.isEmpty()) {
            problems.add(artifactId + ": no <developers><developer>");
        }
        for (Element d : developers) {
            if (text(d, "name").isEmpty()) {
                problems.add(artifactId + ": a developer without a name");
            }
        }
        Element scm = child(pom, "scm");
        for (String element : List.of("connection", "developerConnection", "url")) {
            if (text(scm, element).isEmpty()) {
                problems.add(artifactId + ": no <scm><" + element + ">");
            }
        }
        if (child(pom, "parent") != null) {
            problems.add(artifactId + ": a <parent>, which is not published");
        }
        for (Element d : children(child(pom, "dependencies"), "dependency")) {
            if (text(d, "groupId").equals("dev.cart") && !published.contains(text(d, "artifactId"))) {
                problems.add(artifactId + ": depends on the unpublished " + text(d, "artifactId"));
            }
        }
        // ${project.version} (the BOM's entries) resolves to the POM's own version where it is read
        if (pom.getTextContent().replace("${project.version}", "").contains("${")) {
            problems.add(artifactId + ": an unresolved ${...} expression");
        }
        return problems;
    }
}
