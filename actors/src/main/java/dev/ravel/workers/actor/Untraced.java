package dev.ravel.workers.actor;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a role method whose calls open no span (introspection such as stats), so that calls made outside
 * any step do not show up as stray one-span traces. The caller's context is still resumed.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface Untraced {}
