/** GET /metrics: Prometheus text of every decision the module's limiters made. */
import { Controller, Get, Header, type OnModuleDestroy } from '@nestjs/common';
import { createMetrics, PROMETHEUS_CONTENT_TYPE } from '@sluice/core';
import { RateLimitService } from '@sluice/nestjs';

/** Never limited: no `@RateLimit()` and the module's `defaultPolicies` is empty. */
@Controller('metrics')
export class MetricsController implements OnModuleDestroy {
  private readonly metrics = createMetrics();
  private readonly unsubscribe: () => void;

  constructor(rateLimit: RateLimitService) {
    this.unsubscribe = rateLimit.onDecision((event) => this.metrics.record(event));
  }

  @Get()
  @Header('Content-Type', PROMETHEUS_CONTENT_TYPE)
  render(): string {
    return this.metrics.render();
  }

  onModuleDestroy(): void {
    this.unsubscribe();
  }
}
