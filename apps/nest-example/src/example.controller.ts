/** The routes of the example-app contract. */
import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { API_KEY_HEADER, ROUTE_LIMITS, tieredPolicies } from '@sluice/example-kit';
import { RateLimit } from '@sluice/nestjs';

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

  @Get('tiered')
  @RateLimit({ policies: (req) => tieredPolicies(req.headers[API_KEY_HEADER]) })
  tiered() {
    return OK;
  }
}
