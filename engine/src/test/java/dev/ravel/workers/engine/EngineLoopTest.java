package dev.ravel.workers.engine;

import static dev.ravel.workers.engine.Requests.config;
import static org.assertj.core.api.Assertions.assertThat;

import dev.ravel.workers.model.LanguageModel;
import io.opentelemetry.api.OpenTelemetry;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120) // a hang guard only: nothing here asserts a duration
final class EngineLoopTest {
  private EngineLoop loop;
  private BatchScheduler scheduler;
  private RequestTelemetry telemetry;

  private EngineLoop loop(LanguageModel model) {
    EngineConfig config = config().build();
    telemetry = new RequestTelemetry(config, OpenTelemetry.noop().getTracer("test"),
        new EngineMetrics(OpenTelemetry.noop().getMeter("test"), config.modelName()), System::nanoTime);
    scheduler = new BatchScheduler(config, model, telemetry, System::nanoTime);
    loop = new EngineLoop(config.modelName(), scheduler, telemetry);
    return loop;
  }

  @AfterEach
  void closeLoop() {
    if (loop != null) {
      loop.close();
    }
  }

  private static Sequence sequence(String id) {
    return new Sequence(Requests.request(id, 3, 50, 1), System.nanoTime());
  }

  @Test
  void waitingNow_beforeTheThreadRuns_countsTheInbox() {
    EngineLoop loop = loop(FakeModel.of(1));

    loop.enqueue(List.of(sequence("a"), sequence("b")));

    assertThat(loop.waitingNow()).isEqualTo(2);
    assertThat(loop.isAlive()).isFalse();
  }

  @Test
  void run_schedulerThrowsAnError_failsItsRequestsAndLaterOnesNamingTheCrash() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    EngineLoop loop = loop(FakeModel.of(1).eosLogit(FakeModel.NEVER).onForward(() -> {
      if (calls.incrementAndGet() == 3) {
        throw new AssertionError("kaput");
      }
    }));
    Sequence a = sequence("a");
    loop.start();

    loop.enqueue(List.of(a));

    GenerationResult r = a.future.get(10, TimeUnit.SECONDS);
    assertThat(r.finishReason()).isEqualTo(FinishReason.ERROR);
    assertThat(r.error()).isEqualTo("engine failed: java.lang.AssertionError: kaput");
    assertThat(r.completionTokens()).hasSize(2);
    loop.close();
    assertThat(loop.isAlive()).isFalse();
    Sequence later = sequence("later");
    loop.enqueue(List.of(later));
    assertThat(later.future).isDone();
    assertThat(later.future.join().error()).isEqualTo(r.error());
    assertThat(telemetry.finishedCounts()[FinishReason.ERROR.ordinal()]).isEqualTo(2);
    assertThat(loop.waitingNow()).isZero();
  }

  @Test
  @Timeout(60)
  void run_errorRecomputingAfterAWeightUpdate_alsoFailsTheRequestsArrivingInThatStep() throws Exception {
    FakeModel broken = FakeModel.of(2).onForward(() -> {
      throw new StackOverflowError("simulated in recompute");
    });
    Sequence a = sequence("a");
    Sequence b = sequence("b");
    AtomicInteger calls = new AtomicInteger();
    // mid-step on the scheduler thread: offer the broken model and queue b, so the next step takes b as an
    // arrival and then fails recomputing a's cache before it queues b
    EngineLoop loop = loop(FakeModel.of(1).eosLogit(FakeModel.NEVER).onForward(() -> {
      if (calls.incrementAndGet() == 2) {
        scheduler.updateModel(broken);
        this.loop.enqueue(List.of(b));
      }
    }));
    loop.start();

    loop.enqueue(List.of(a));

    String error = "engine failed: java.lang.StackOverflowError: simulated in recompute";
    for (Sequence s : List.of(a, b)) {
      GenerationResult r = s.future.get();
      assertThat(r.finishReason()).as(r.requestId()).isEqualTo(FinishReason.ERROR);
      assertThat(r.error()).as(r.requestId()).isEqualTo(error);
    }
    assertThat(a.future.join().completionTokens()).hasSize(1);
    assertThat(b.future.join().completionTokens()).isEmpty();
    loop.close();
    assertThat(loop.isAlive()).isFalse();
    assertThat(telemetry.finishedCounts()[FinishReason.ERROR.ordinal()]).isEqualTo(2);
    assertThat(loop.waitingNow()).isZero();
    assertThat(scheduler.publishedRunning()).isZero();
    assertThat(scheduler.publishedKvUsed()).isZero();
  }
}
