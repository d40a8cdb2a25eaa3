import { Injectable } from '@nestjs/common';

/** Writes and publishes this worker attempted after its lease was gone, and that were refused. */
@Injectable()
export class FencingStats {
  fencedWrites = 0;
  fencedPublishes = 0;
}
