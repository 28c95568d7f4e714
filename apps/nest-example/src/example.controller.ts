/** The routes of the example-app contract. */
import { Controller, Get, HttpCode, HttpException, Post, Query } from '@nestjs/common';
import {
  API_KEY_HEADER,
  concurrentReply,
  generateReply,
  generateUnits,
  loginReply,
  ROUTE_LIMITS,
  tieredPolicies,
} from '@sluice/example-kit';
import { RateLimit, type RateLimitRequest } from '@sluice/nestjs';

const OK = { ok: true } as const;

/** Every route of the contract but /metrics; none is limited unless decorated. */
@Controller()
export class ExampleController {
  @Get('health')
  health() {
    return OK;
  }

  @Get('limited')
  @RateLimit(...ROUTE_LIMITS.limited.policies)
  limited() {
    return OK;
  }

  @Post('transfers/:id')
  @HttpCode(200)
  @RateLimit({ policies: ROUTE_LIMITS.transfer.policies, cost: ROUTE_LIMITS.transfer.cost })
  transfer() {
    return OK;
  }

  @Get('transfers/:id/status')
  @RateLimit({ policies: ROUTE_LIMITS.transferStatus.policies, cost: ROUTE_LIMITS.transferStatus.cost })
  transferStatus() {
    return OK;
  }

  @Get('shadow')
  @RateLimit(...ROUTE_LIMITS.shadow.policies)
  shadow() {
    return OK;
  }

  @Get('strict')
  @RateLimit(...ROUTE_LIMITS.strict.policies)
  strict() {
    return OK;
  }

  @Get('lenient')
  @RateLimit(...ROUTE_LIMITS.lenient.policies)
  lenient() {
    return OK;
  }

  @Get('leased')
  @RateLimit(...ROUTE_LIMITS.leased.policies)
  leased() {
    return OK;
  }

  @Get('tiered')
  @RateLimit({ policies: (req) => tieredPolicies(req.headers[API_KEY_HEADER]) })
  tiered() {
    return OK;
  }

  @Get('queued')
  @RateLimit(...ROUTE_LIMITS.queued.policies)
  queued() {
    return OK;
  }

  @Get('concurrent')
  @RateLimit(...ROUTE_LIMITS.concurrent.policies)
  async concurrent(@Query('ms') ms?: string) {
    return answer(await concurrentReply(ms));
  }

  @Post('generate')
  @HttpCode(200)
  @RateLimit({
    ...ROUTE_LIMITS.generate,
    settle: (req) => generateUnits(queryOf(req, 'used'), ROUTE_LIMITS.generate.cost['llm-tokens']),
  })
  generate(@Query('used') used?: string) {
    return answer(generateReply(used));
  }

  @Post('login')
  @HttpCode(200)
  @RateLimit({ ...ROUTE_LIMITS.login, skipSuccessfulRequests: true })
  login(@Query('ok') ok?: string) {
    return answer(loginReply(ok));
  }
}

/** A reply of the example kit: its body, or an HttpException carrying it for another status. */
function answer(reply: { status: number; body: object }): object {
  if (reply.status !== 200) throw new HttpException(reply.body, reply.status);
  return reply.body;
}

/** A query parameter of the request (Express and Fastify both parse `req.query`). */
function queryOf(req: RateLimitRequest, name: string): string | undefined {
  const value = (req as { query?: Record<string, unknown> }).query?.[name];
  return typeof value === 'string' ? value : undefined;
}
