// Original file: src/proto/v3electionpb/v3election.proto

import type { MethodDefinition } from '@grpc/proto-loader'
import type { CampaignRequest__Input as _v3electionpb_CampaignRequest__Input, CampaignRequest__Output as _v3electionpb_CampaignRequest__Output } from '../v3electionpb/CampaignRequest.js';
import type { CampaignResponse__Input as _v3electionpb_CampaignResponse__Input, CampaignResponse__Output as _v3electionpb_CampaignResponse__Output } from '../v3electionpb/CampaignResponse.js';
import type { LeaderRequest__Input as _v3electionpb_LeaderRequest__Input, LeaderRequest__Output as _v3electionpb_LeaderRequest__Output } from '../v3electionpb/LeaderRequest.js';
import type { LeaderResponse__Input as _v3electionpb_LeaderResponse__Input, LeaderResponse__Output as _v3electionpb_LeaderResponse__Output } from '../v3electionpb/LeaderResponse.js';
import type { ProclaimRequest__Input as _v3electionpb_ProclaimRequest__Input, ProclaimRequest__Output as _v3electionpb_ProclaimRequest__Output } from '../v3electionpb/ProclaimRequest.js';
import type { ProclaimResponse__Input as _v3electionpb_ProclaimResponse__Input, ProclaimResponse__Output as _v3electionpb_ProclaimResponse__Output } from '../v3electionpb/ProclaimResponse.js';
import type { ResignRequest__Input as _v3electionpb_ResignRequest__Input, ResignRequest__Output as _v3electionpb_ResignRequest__Output } from '../v3electionpb/ResignRequest.js';
import type { ResignResponse__Input as _v3electionpb_ResignResponse__Input, ResignResponse__Output as _v3electionpb_ResignResponse__Output } from '../v3electionpb/ResignResponse.js';

export interface ElectionDefinition {
  Campaign: MethodDefinition<_v3electionpb_CampaignRequest__Input, _v3electionpb_CampaignResponse__Input, _v3electionpb_CampaignRequest__Output, _v3electionpb_CampaignResponse__Output>
  Leader: MethodDefinition<_v3electionpb_LeaderRequest__Input, _v3electionpb_LeaderResponse__Input, _v3electionpb_LeaderRequest__Output, _v3electionpb_LeaderResponse__Output>
  Observe: MethodDefinition<_v3electionpb_LeaderRequest__Input, _v3electionpb_LeaderResponse__Input, _v3electionpb_LeaderRequest__Output, _v3electionpb_LeaderResponse__Output>
  Proclaim: MethodDefinition<_v3electionpb_ProclaimRequest__Input, _v3electionpb_ProclaimResponse__Input, _v3electionpb_ProclaimRequest__Output, _v3electionpb_ProclaimResponse__Output>
  Resign: MethodDefinition<_v3electionpb_ResignRequest__Input, _v3electionpb_ResignResponse__Input, _v3electionpb_ResignRequest__Output, _v3electionpb_ResignResponse__Output>
}
