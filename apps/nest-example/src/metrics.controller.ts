/** GET /metrics: Prometheus text of every decision the module's limiters made. */
import { Controller, Get, type OnModuleDestroy, Res } from '@nestjs/common';
import { createMetrics } from '@sluice/core';
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
  render(@Res({ passthrough: true }) res: { setHeader(name: string, value: string): void }): string {
    res.setHeader('Content-Type', this.metrics.contentType);
    return this.metrics.render();
  }

  onModuleDestroy(): void {
    this.unsubscribe();
  }
}
