/**
 * Reading a run's spans as steps and drawing them: {@link dev.ravel.telemetry.view.RunView} groups one run's
 * spans into one {@link dev.ravel.telemetry.view.StepView} per {@code rl.grpo.step} trace (tree, phase split,
 * goodput, critical path, consumed rollouts) and keeps the spans that fit no step apart, so gaps show;
 * {@link dev.ravel.telemetry.view.TerminalWaterfall} and {@link dev.ravel.telemetry.view.HtmlWaterfall} draw
 * them the way Jaeger's trace view does (see {@code notes/otel.md}, "Waterfall conventions").
 *
 * <p>Everything here is an immutable value computed once; the same spans, in any order, give the same views
 * and the same rendered text.
 */
package dev.ravel.telemetry.view;
